// The coordinator's state machine: registration, roles, barriers, feed accounting,
// heartbeats, exits and failures, driven by the frames of authenticated connections and
// by the passing of time, with no sockets, threads or clock of its own. The coordinator's
// socket loop feeds it events and carries out the effects it returns; tests drive it
// directly with a fake time.
//
// Connections are named by the loop's ids. Not thread-safe: one caller at a time (the
// coordinator holds its mutex around every call).
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sparktf/cluster/protocol.h"
#include "sparktf/cluster/tensorflow_roles.h"

namespace sparktf::cluster {

using TimePoint = std::chrono::steady_clock::time_point;

struct ClusterOptions {
  int num_nodes = 0;
  RoleOptions roles;
  std::chrono::milliseconds heartbeat_timeout = kDefaultHeartbeatTimeout;
  // A training node (not ps or evaluator) whose step rate (NODE_METRICS) stays under
  // straggler_fraction of the median of the training nodes' rates for straggler_after is
  // a straggler: named in the status and warned about once. 0 turns this off.
  double straggler_fraction = 0.5;
  std::chrono::milliseconds straggler_after{30000};
};

// What the coordinator knows of one node (an executor's agent).
struct NodeState {
  enum Phase { kRegistered, kRunning, kExited, kLost };
  int executor_id = -1;
  std::string host;
  int port = 0;
  int pid = 0;
  std::string gpus;  // JSON array
  Role role;         // set when the cluster is formed
  Phase phase = kRegistered;
  int exit_code = 0;
  int signal = 0;
  bool stopped = false;  // exited because the coordinator asked it to
  std::string traceback;
  std::string stderr_tail;
  std::string reason;          // why its agent stopped the TF process, if it did
  std::string tensorboard;     // URL, if this node runs TensorBoard
  int feed_port = 0;           // its agent's feed service (SPARK mode), 0 if none
  std::string spark_executor;  // Spark's executor id, if the agent was told it
  std::string container;       // the YARN container it runs in, if any
  // Its training progress (NODE_METRICS): the last report, with "steps_per_sec" over the
  // last two reports added; null before any.
  nlohmann::json training;
  TimePoint training_at;
  bool slow = false;       // under the straggler fraction of the median, since slow_since
  TimePoint slow_since;
  bool straggler = false;  // slow for straggler_after
  // Its input (FEED_SYNC of its TF process): rows fed and taken, batches, dropped, ring
  // fill, and over the last two reports the rows taken a second and the input stall (the
  // share of the time next() waited for data); null before any.
  nlohmann::json input;
  TimePoint input_at;
  int conn = -1;               // connection id of its agent; -1 once closed
  TimePoint registered_at;
  TimePoint last_seen;
};

// How often the status history takes a sample, and how many it keeps (half an hour).
constexpr std::chrono::milliseconds kHistoryInterval{2000};
constexpr size_t kHistoryPoints = 900;

// What an event asks the transport to do, in order: messages to send, then connections
// to close once what was sent to them is flushed.
struct Effects {
  struct Message {
    int conn;
    MessageType type;
    std::string payload;
  };
  // Lines a node's TF process wrote (NODE_OUTPUT), for the driver's log (node_logs.h).
  struct Output {
    std::string node;  // "worker:1"
    int generation;
    std::string stream;  // "stdout" or "stderr"
    std::string text;    // one line, without its newline
  };
  std::vector<Message> messages;
  std::vector<int> close;
  std::vector<Output> output;
  // Warnings for the driver's log (stragglers).
  std::vector<std::string> warnings;
};

class ClusterState {
 public:
  // Precondition: options validated (the coordinator's Start does it).
  ClusterState(const ClusterOptions& options, TimePoint now);

  // An authenticated connection's frame (anything but HELLO).
  void OnFrame(int conn, const Frame& f, TimePoint now, Effects* fx);
  // A connection is gone (closed by its peer, or failed); a node's agent whose
  // connection closes without an exit report is lost.
  void OnClosed(int conn, Effects* fx);
  // Heartbeat deadlines; call every few hundred ms. (The end of the cluster follows from
  // the exits and closes themselves.)
  void OnTick(TimePoint now, Effects* fx);
  // Tells every node to kill its processes; the first reason is kept.
  void Abort(const std::string& reason, Effects* fx);
  // Once the workers are done, evaluator nodes get `grace` to finish by themselves
  // (e.g. evaluate the last checkpoint) before they are stopped; ps nodes are stopped
  // at once. Default 0. Takes effect at the next frame or tick.
  void SetEvaluatorGrace(std::chrono::milliseconds grace) { evaluator_grace_ = grace; }
  // A connection refused by the transport (bad token, bad frame, no HELLO in time).
  void CountRejection() { ++rejected_; }
  // Starts the next generation: the nodes of this one are forgotten and their agents'
  // connections closed; nodes register again (with the new generation number) and the
  // cluster forms anew. Frames that name another generation are refused and counted.
  void Restart(TimePoint now, Effects* fx);

  int generation() const { return generation_; }
  int stale_messages() const { return stale_; }
  bool reserved() const { return reserved_; }
  bool aborted() const { return aborted_; }
  bool finished() const { return finished_; }
  const std::string& abort_reason() const { return abort_reason_; }
  int rejected_connections() const { return rejected_; }
  // The cluster spec (JSON), or "{}" before reservation.
  std::string ClusterJson() const { return info_ ? info_->spec() : "{}"; }
  // Everything: nodes, phases, roles, exits, errors, feeds, totals (JSON).
  std::string StatusJson() const;
  // Samples taken every kHistoryInterval, oldest first: per node its step, steps/s, loss,
  // rows/s, input stall and ring fill (JSON, for charts).
  std::string HistoryJson() const;
  // Why a reservation that did not complete by `now` is late, and what to change.
  std::string ReservationTimeoutMessage(TimePoint now, int port) const;
  // The nodes still running (for a timeout message).
  std::string RunningNodes() const;

 private:
  void Reject(int conn, const Status& why, Effects* fx);
  void HandleRegister(int conn, const std::string& payload, TimePoint now, Effects* fx);
  void HandleHeartbeat(int conn, const std::string& payload, TimePoint now);
  void HandleNodeOutput(int conn, const std::string& payload, Effects* fx);
  void HandleNodeMetrics(int conn, const std::string& payload, TimePoint now, Effects* fx);
  void FindStragglers(TimePoint now, Effects* fx);
  void HandleExit(int conn, const std::string& payload, Effects* fx);
  void HandleBarrier(int conn, const std::string& payload, Effects* fx);
  void HandleFeedSync(int conn, const std::string& payload, TimePoint now, Effects* fx);
  void HandleFeedAssign(int conn, const std::string& payload, Effects* fx);
  void UpdateInput(NodeState& n, const nlohmann::json& report, TimePoint now);
  void RecordHistory(TimePoint now);
  // "worker:1", or "node" before roles are assigned.
  static std::string NodeName(const NodeState& n);
  nlohmann::json Totals() const;
  void FormCluster(Effects* fx);
  void StopServicesOrFinish(Effects* fx);
  std::string Describe(const NodeState& n) const;
  // The node whose agent holds `conn`, or nullptr.
  NodeState* NodeOf(int conn);
  // False (and the frame refused and counted) when `j` names a generation other than
  // this one; frames without one are of generation 0.
  bool OfThisGeneration(int conn, const nlohmann::json& j, const char* what, Effects* fx);

  const ClusterOptions options_;
  TimePoint created_;  // of this generation
  int generation_ = 0;
  int stale_ = 0;
  std::map<int, NodeState> nodes_;       // by executor id
  std::map<int, int> executor_of_conn_;  // agents' connections
  std::set<int> awaiting_cluster_;       // connections waiting for CLUSTER_SPEC
  bool reserved_ = false;
  std::optional<TensorFlowClusterInfo> info_;  // once formed
  bool aborted_ = false;
  std::string abort_reason_;
  bool services_stopping_ = false;
  bool evaluators_stopping_ = false;
  TimePoint now_;               // of the last frame or tick
  TimePoint workers_done_at_;   // once services_stopping_
  std::chrono::milliseconds evaluator_grace_{0};
  bool finished_ = false;
  int rejected_ = 0;
  std::map<std::string, std::vector<int>> barrier_waiters_;   // name -> conn ids
  std::map<std::string, std::set<int>> barrier_arrivals_;     // name -> executor ids
  // Feed accounting per queue name, per executor: the last FEED_SYNC report.
  struct FeedReport {
    uint64_t delivered = 0;
    bool closed = false;
    nlohmann::json payload;  // everything it said, for the status
  };
  std::map<std::string, std::map<int, FeedReport>> feeds_;
  // Where each feeding job's partitions go (FEED_ASSIGN), by feed id.
  struct FeedPlacement {
    std::map<int64_t, int> target;  // partition -> executor id
    std::map<int, int> count;       // executor id -> partitions given
  };
  std::map<uint64_t, FeedPlacement> placements_;
  const TimePoint started_;  // of the first generation
  std::vector<nlohmann::json> history_;  // a ring of kHistoryPoints samples
  size_t history_next_ = 0;              // where the next sample goes once it is full
  TimePoint history_at_;                 // of the last sample
};

}  // namespace sparktf::cluster
