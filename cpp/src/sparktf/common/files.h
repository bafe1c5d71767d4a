// Naming input files the way Spark/Hadoop output directories look.
#pragma once

#include <string>
#include <vector>

#include "sparktf/common/result.h"

namespace sparktf {

// Expands each directory to its regular files in name order, skipping hidden
// and bookkeeping entries (names starting with '.' or '_', e.g. _SUCCESS);
// keeps plain files as given. A path that does not exist is NotFound.
Result<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& paths);

}  // namespace sparktf
