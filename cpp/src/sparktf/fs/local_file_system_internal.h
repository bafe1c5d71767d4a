// Internal to fs/: the filesystem of local paths and file:// URIs (POSIX).
#pragma once

#include <memory>

#include "sparktf/fs/file_system.h"

namespace sparktf {

std::shared_ptr<FileSystem> MakeLocalFileSystem();

}  // namespace sparktf
