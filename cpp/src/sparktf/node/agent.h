// The node agent: one per Spark executor (or per `sparktf launch` node).
//
// It reserves a port, registers with the coordinator, waits for its role,
// then launches the TF process (its own process group) with TF_CONFIG set,
// and supervises it: forwards its stdout and stderr (to its own, and with
// stream_output to the coordinator) and keeps the last stderr lines, sends
// heartbeats, reports its exit (with the Python traceback the process wrote to
// the error file), and kills the whole process group when the coordinator
// says ABORT or STOP, when the coordinator connection drops, or when the agent
// itself is told to terminate (SIGTERM/SIGINT/SIGHUP, or its parent dying).
//
// RunAgent installs a process-wide signal mask: run one agent per process.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "sparktf/cluster/protocol.h"

namespace sparktf::node {

constexpr std::chrono::milliseconds kDefaultKillGrace{5000};
// The same when the node or its cluster is going down anyway (an abort, a lost
// coordinator or executor, a signal to the agent): TensorFlow catches SIGTERM and would
// spend the whole grace dumping stacks.
constexpr std::chrono::milliseconds kDefaultAbortKillGrace{250};
// How long a TF process may take to exit after it said map_fun returned.
constexpr std::chrono::milliseconds kDefaultExitGrace{500};
constexpr std::chrono::milliseconds kDefaultReservationTimeout{600000};

struct AgentOptions {
  HostPort coordinator;
  std::string token;
  int executor_id = 0;
  std::vector<std::string> command;  // argv of the TF process
  std::map<std::string, std::string> env;  // added to the TF process's environment
  std::vector<std::string> gpus;           // CUDA_VISIBLE_DEVICES when not empty
  std::string error_file;  // where the TF process writes a traceback (optional)
  std::string tensorboard_logdir;  // start TensorBoard here if this node is the chief
  std::string python = "python3";  // for TensorBoard
  std::chrono::milliseconds connect_timeout = cluster::kDefaultConnectTimeout;
  // The source address of the connection to the coordinator, which makes it this node's
  // address in TF_CONFIG (empty: the kernel's choice). Spark's SPARK_LOCAL_IP.
  std::string local_ip;
  // The node stops when what it sent the coordinator stays unacknowledged this long
  // (its host was cut off: the coordinator's ABORT cannot reach it either).
  std::chrono::milliseconds coordinator_timeout = cluster::kDefaultHeartbeatTimeout;
  std::chrono::milliseconds reservation_timeout = kDefaultReservationTimeout;
  std::chrono::milliseconds heartbeat_interval = cluster::kDefaultHeartbeatInterval;
  std::chrono::milliseconds kill_grace = kDefaultKillGrace;
  std::chrono::milliseconds exit_grace = kDefaultExitGrace;
  std::chrono::milliseconds abort_kill_grace = kDefaultAbortKillGrace;
  // The TF process fails when its main thread has not moved for this long (0: never).
  std::chrono::milliseconds progress_timeout{0};
  size_t stderr_tail_lines = 40;
  // Also send what the TF process writes to the coordinator (NODE_OUTPUT), in lines,
  // at most every output_interval (or sooner once 64 KiB are held).
  bool stream_output = false;
  std::chrono::milliseconds output_interval{200};
  bool die_with_parent = true;  // PR_SET_PDEATHSIG
  int watch_pid = 0;  // also stop when this process ends (the Spark executor's JVM)
  int ready_fd = -1;  // gets "ready\n" (then closed) once the TF process runs
  // Where the node runs, for messages: Spark's id of the executor (and the YARN container,
  // from $CONTAINER_ID) are sent with the registration.
  std::string spark_executor;
  // The cluster's generation this node belongs to (0, then 1 after a restart, ...).
  int generation = 0;
  // SPARK mode: serve feeds for this cluster id (node/feed_service.h).
  std::string feed_cluster_id;
  std::chrono::milliseconds feed_timeout{600000};
};

// Runs the node to the end. Returns the exit code for the agent's own process:
// the TF process's (128 + signal if killed), 0 when stopped on request.
// Errors before the TF process starts (coordinator unreachable, reservation
// timeout, abort) are returned as Status.
Result<int> RunAgent(const AgentOptions& options);

}  // namespace sparktf::node
