// Internal to fs/: hdfs:// through hdfs-native (remote_ffi/), no JVM in the process.
#pragma once

#include <memory>
#include <string>

#include "sparktf/fs/file_system.h"

namespace sparktf {

// `authority` is "host:port", a nameservice, or "" for fs.defaultFS (HADOOP_CONF_DIR).
Result<std::shared_ptr<FileSystem>> MakeHdfsFileSystem(const std::string& authority);

// fs.defaultFS of the Hadoop configuration (HADOOP_CONF_DIR, else HADOOP_HOME/etc/hadoop),
// or "" when there is none.
std::string HadoopDefaultFs();

}  // namespace sparktf
