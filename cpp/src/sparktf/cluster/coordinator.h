// The coordinator: runs on the Spark driver, gathers the node agents, assigns
// roles in TFoS's order, hands out the cluster spec and TF_CONFIG, watches
// heartbeats and exits, and aborts every node when one fails.
//
// This is the transport: one thread (started by Start) owns every socket and runs a
// poll loop that authenticates connections (HELLO with the cluster token), decodes
// frames, hands them to the ClusterState (cluster_state.h, where the rules live) and
// sends what it answers. The public methods are thread-safe and never block that
// thread. Nothing is process-global: several coordinators can run in one process
// (tests do).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "sparktf/cluster/cluster_state.h"
#include "sparktf/cluster/node_logs.h"
#include "sparktf/cluster/protocol.h"
#include "sparktf/cluster/status_server.h"

namespace sparktf::cluster {

struct CoordinatorOptions {
  std::string bind_host = "0.0.0.0";
  int port = 0;  // 0 = any free port
  std::string token;
  int num_nodes = 0;
  int num_ps = 0;
  std::string master_node;  // "", "chief" or "master"
  bool eval_node = false;
  std::chrono::milliseconds hello_timeout = kDefaultHelloTimeout;
  std::chrono::milliseconds heartbeat_timeout = kDefaultHeartbeatTimeout;
  size_t max_frame_size = kDefaultMaxFrameSize;
  // What the nodes' TF processes write (agents started with stream_output): kept per
  // node under node_logs.dir and echoed to node_logs.echo_fd (node_logs.h).
  NodeLogOptions node_logs;
  // ClusterOptions: stragglers are warned about on stderr ("sparktf: ...").
  double straggler_fraction = 0.5;
  std::chrono::milliseconds straggler_after{30000};
  // The HTTP status endpoint (status_server.h), serving StatusJson and HistoryJson; none
  // without.
  std::optional<StatusServerOptions> status_server;
};

class Coordinator {
 public:
  static Result<std::unique_ptr<Coordinator>> Start(const CoordinatorOptions& options);
  ~Coordinator();
  Coordinator(const Coordinator&) = delete;
  Coordinator& operator=(const Coordinator&) = delete;

  int port() const { return port_; }

  // Waits until every node has registered and roles are assigned. On timeout:
  // DeadlineExceeded naming the executors that did not register and the usual
  // causes; Aborted if the cluster was aborted meanwhile.
  Status WaitReserved(std::chrono::milliseconds timeout);
  // Waits until every worker/chief/master has exited, then stops the nodes
  // that serve until told (ps, evaluator; and workers when there are ps nodes
  // and a chief, as in ParameterServerStrategy) and waits for them too. Aborted, with the failed node's
  // traceback, if any node failed or was lost.
  Status WaitFinished(std::chrono::milliseconds timeout);
  // Tells every node to kill its processes; the first reason is kept.
  void Abort(const std::string& reason);
  // ClusterState::SetEvaluatorGrace.
  void SetEvaluatorGrace(std::chrono::milliseconds grace);
  // Starts the next generation on the same port (ClusterState::Restart); returns its
  // number. WaitReserved then waits for the new generation's nodes.
  int Restart();
  // The cluster spec and per-node roles (JSON), or "{}" before reservation.
  std::string ClusterJson() const;
  // Everything: nodes, phases, exits, errors (JSON).
  std::string StatusJson() const;
  // ClusterState::HistoryJson.
  std::string HistoryJson() const;
  // The status endpoint's port, 0 without one.
  int status_port() const { return status_server_ ? status_server_->port() : 0; }
  // The log file of `node` ("worker:1") of the current generation ("" without a
  // node_logs.dir).
  std::string NodeLogPath(const std::string& node) const;
  // Connections refused so far (bad token, malformed or oversized frames).
  int rejected_connections() const;
  // Stops the loop thread and closes every socket. Idempotent.
  void Shutdown();

 private:
  struct Conn;
  explicit Coordinator(const CoordinatorOptions& options);
  void Loop();
  void Wake();
  void Accept();
  void ReadFrom(Conn& c);
  void Flush(Conn& c);
  void Reject(Conn& c, const Status& why);
  void CloseConn(Conn& c);
  void CheckHelloTimeouts();
  // Queues the state machine's messages and closes; wakes the waiters.
  void Apply(Effects& fx);

  CoordinatorOptions options_;
  int port_ = 0;
  UniqueFd listen_fd_;
  UniqueFd wake_read_, wake_write_;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool shutdown_ = false;
  std::map<int, std::unique_ptr<Conn>> conns_;
  std::set<int> pending_;  // connections with output to flush or a close to carry out
  int next_conn_id_ = 0;
  ClusterState state_;  // guarded by mu_
  NodeLogs node_logs_;  // guarded by mu_
  std::unique_ptr<StatusServer> status_server_;  // stopped before the rest
};

}  // namespace sparktf::cluster
