// The coordinator: runs on the Spark driver, gathers the node agents, assigns
// roles in TFoS's order, hands out the cluster spec and TF_CONFIG, watches
// heartbeats and exits, and aborts every node when one fails.
//
// One thread (started by Start) owns every socket and runs a poll loop; the
// public methods are thread-safe and never block that thread. Nothing is
// process-global: several coordinators can run in one process (tests do).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "sparktf/cluster/protocol.h"

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
};

// What the coordinator knows of one node (an executor's agent).
struct NodeState {
  enum Phase { kRegistered, kRunning, kExited, kLost };
  int executor_id = -1;
  std::string host;
  int port = 0;
  int pid = 0;
  std::string gpus;  // JSON array
  std::string job_name;
  int task_index = -1;
  int worker_num = -1;
  Phase phase = kRegistered;
  int exit_code = 0;
  int signal = 0;
  bool stopped = false;  // exited because the coordinator asked it to
  std::string traceback;
  std::string stderr_tail;
  std::string reason;  // why its agent stopped the TF process, if it did
  std::string tensorboard;  // URL, if this node runs TensorBoard
  int feed_port = 0;        // its agent's feed service (SPARK mode), 0 if none
  std::string spark_executor;  // Spark's executor id, if the agent was told it
  std::string container;       // the YARN container it runs in, if any
  int conn = -1;  // connection id of its agent; -1 once closed
  std::chrono::steady_clock::time_point last_seen;
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
  // The cluster spec and per-node roles (JSON), or "{}" before reservation.
  std::string ClusterJson() const;
  // Everything: nodes, phases, exits, errors (JSON).
  std::string StatusJson() const;
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
  void Handle(Conn& c, const Frame& f);
  void HandleRegister(Conn& c, const std::string& payload);
  void HandleExit(Conn& c, const std::string& payload);
  void HandleBarrier(Conn& c, const std::string& payload);
  void HandleFeedSync(Conn& c, const std::string& payload);
  void Reject(Conn& c, const Status& why);
  void Send(Conn& c, MessageType type, const std::string& payload);
  void CloseConn(Conn& c);
  void AssignRoles();
  std::string ClusterSpecFor(const NodeState& n) const;
  void AbortLocked(const std::string& reason);
  bool IsServiceRole(const std::string& job) const;
  void UpdateCompletion();
  void CheckTimeouts();
  std::string Describe(const NodeState& n) const;
  std::string StatusJsonLocked() const;

  CoordinatorOptions options_;
  int port_ = 0;
  // When registrations opened: a reservation timeout reports the whole wait, however
  // many WaitReserved calls it took.
  const std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  UniqueFd listen_fd_;
  UniqueFd wake_read_, wake_write_;
  std::thread thread_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool shutdown_ = false;
  std::map<int, std::unique_ptr<Conn>> conns_;
  int next_conn_id_ = 0;
  std::map<int, NodeState> nodes_;  // by executor id
  bool reserved_ = false;
  std::string cluster_spec_;  // JSON object {job: [host:port, ...]}
  bool aborted_ = false;
  std::string abort_reason_;
  bool services_stopping_ = false;
  bool finished_ = false;
  int rejected_ = 0;
  std::map<std::string, std::vector<int>> barriers_;  // name -> waiting conn ids
  std::map<std::string, std::vector<int>> barrier_arrivals_;  // name -> executor ids
  // Feed accounting per queue name, per executor: the last FEED_SYNC payload.
  std::map<std::string, std::map<int, std::string>> feeds_;
};

}  // namespace sparktf::cluster
