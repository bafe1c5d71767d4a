// Where the lines a node's TF process writes end up on the driver (NODE_OUTPUT): one file
// per node under a directory, and each line echoed, prefixed with the node ("[worker:1] "),
// to a file descriptor (the driver's stderr). Not thread-safe: the coordinator's loop
// thread owns it.
#pragma once

#include <map>
#include <string>

#include "sparktf/cluster/cluster_state.h"
#include "sparktf/common/net.h"

namespace sparktf::cluster {

struct NodeLogOptions {
  std::string dir;    // "" = no files; else created if missing
  int echo_fd = -1;   // -1 = no echo
};

class NodeLogs {
 public:
  explicit NodeLogs(NodeLogOptions options) : options_(std::move(options)) {}

  // The file of `node` ("worker:1" -> <dir>/worker-1.log; generation g > 0 ->
  // worker-1.gen<g>.log), or "" without a directory.
  std::string PathOf(const std::string& node, int generation) const;
  // Appends the line to its node's file and echoes it. Write errors are dropped (a full
  // disk must not end the cluster); the first one is kept for last_error().
  void Write(const Effects::Output& line);
  const std::string& last_error() const { return last_error_; }

 private:
  NodeLogOptions options_;
  std::map<std::string, UniqueFd> files_;  // by path
  std::string last_error_;
};

}  // namespace sparktf::cluster
