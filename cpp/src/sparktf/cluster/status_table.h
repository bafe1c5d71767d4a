// The cluster's status (ClusterState::StatusJson) as a plain-text table, one row a node:
// what `sparktf status URL` and Python's cluster.status() print.
#pragma once

#include <string>

#include "sparktf/common/result.h"

namespace sparktf::cluster {

// A summary line, the nodes table, then the last line of each failed node's traceback
// and the abort reason, if any. InvalidArgument if `status_json` is not a status.
Result<std::string> FormatStatusTable(const std::string& status_json);

}  // namespace sparktf::cluster
