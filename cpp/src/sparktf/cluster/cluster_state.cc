#include "sparktf/cluster/cluster_state.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sparktf/common/json_internal.h"

namespace sparktf::cluster {

using json = nlohmann::json;

ClusterState::ClusterState(const ClusterOptions& options, TimePoint now)
    : options_(options), created_(now), started_(now) {}

NodeState* ClusterState::NodeOf(int conn) {
  auto it = executor_of_conn_.find(conn);
  if (it == executor_of_conn_.end()) return nullptr;
  auto n = nodes_.find(it->second);
  return n == nodes_.end() ? nullptr : &n->second;
}

bool ClusterState::OfThisGeneration(int conn, const json& j, const char* what, Effects* fx) {
  const int g = JsonGetOr(j, "generation", 0);
  if (g == generation_) return true;
  ++stale_;
  Reject(conn,
         Status::Aborted(std::string(what) + " of generation " + std::to_string(g) +
                         ", but the cluster is at generation " + std::to_string(generation_) +
                         " (a node of a cluster that was restarted)"),
         fx);
  return false;
}

void ClusterState::Restart(TimePoint now, Effects* fx) {
  for (const auto& [conn, id] : executor_of_conn_) fx->close.push_back(conn);
  for (const auto& [name, waiting] : barrier_waiters_) {
    fx->close.insert(fx->close.end(), waiting.begin(), waiting.end());
  }
  nodes_.clear();
  executor_of_conn_.clear();
  awaiting_cluster_.clear();
  barrier_waiters_.clear();
  barrier_arrivals_.clear();
  feeds_.clear();
  placements_.clear();
  info_.reset();
  reserved_ = aborted_ = services_stopping_ = evaluators_stopping_ = finished_ = false;
  abort_reason_.clear();
  created_ = now;
  ++generation_;
}

void ClusterState::Reject(int conn, const Status& why, Effects* fx) {
  ++rejected_;
  fx->messages.push_back({conn, MessageType::kError, ErrorPayload(why)});
  fx->close.push_back(conn);
}

void ClusterState::OnFrame(int conn, const Frame& f, TimePoint now, Effects* fx) {
  now_ = now;
  switch (f.type) {
    case MessageType::kRegister: return HandleRegister(conn, f.payload, now, fx);
    case MessageType::kAwaitCluster: {
      NodeState* n = NodeOf(conn);
      if (!n) return Reject(conn, Status::InvalidArgument("register first"), fx);
      if (reserved_) {
        fx->messages.push_back({conn, MessageType::kClusterSpec,
                                info_->NodeInfo(n->role, n->executor_id, options_.num_nodes,
                                                generation_)});
      } else {
        awaiting_cluster_.insert(conn);
      }
      return;
    }
    case MessageType::kHeartbeat: return HandleHeartbeat(conn, f.payload, now);
    case MessageType::kNodeOutput: return HandleNodeOutput(conn, f.payload, fx);
    case MessageType::kNodeMetrics: return HandleNodeMetrics(conn, f.payload, now, fx);
    case MessageType::kReportExit: return HandleExit(conn, f.payload, fx);
    case MessageType::kBarrier: return HandleBarrier(conn, f.payload, fx);
    case MessageType::kFeedSync: return HandleFeedSync(conn, f.payload, now, fx);
    case MessageType::kFeedAssign: return HandleFeedAssign(conn, f.payload, fx);
    case MessageType::kGetStatus:
      fx->messages.push_back({conn, MessageType::kStatus, StatusJson()});
      return;
    default:
      return Reject(conn,
                    Status::InvalidArgument("unexpected message " +
                                            std::string(MessageTypeName(f.type))),
                    fx);
  }
}

void ClusterState::HandleRegister(int conn, const std::string& payload, TimePoint now,
                                  Effects* fx) {
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object() || !j.contains("executor_id") || !j["executor_id"].is_number_integer() ||
      !j.contains("host") || !j["host"].is_string() || !j.contains("port") ||
      !j["port"].is_number_integer()) {
    return Reject(conn, Status::InvalidArgument("REGISTER needs executor_id, host and port"),
                  fx);
  }
  if (!OfThisGeneration(conn, j, "REGISTER", fx)) return;
  const int id = j["executor_id"].get<int>();
  if (id < 0 || id >= options_.num_nodes) {
    return Reject(conn,
                  Status::InvalidArgument("executor_id " + std::to_string(id) +
                                          " is outside 0.." +
                                          std::to_string(options_.num_nodes - 1)),
                  fx);
  }
  if (reserved_) {
    return Reject(conn,
                  Status::Aborted("executor " + std::to_string(id) +
                                  " registered after the cluster was formed (a retried "
                                  "task?); the cluster must be restarted"),
                  fx);
  }
  if (executor_of_conn_.count(conn)) {
    return Reject(conn, Status::InvalidArgument("this connection registered already"), fx);
  }
  auto it = nodes_.find(id);
  if (it != nodes_.end() && it->second.conn >= 0) {
    return Reject(conn,
                  Status::InvalidArgument(
                      "executor " + std::to_string(id) +
                      " registered twice (more than one task slot per executor?)"),
                  fx);
  }
  NodeState n;
  n.executor_id = id;
  n.host = j["host"].get<std::string>();
  n.port = j["port"].get<int>();
  n.pid = JsonGetOr(j, "pid", 0);
  n.spark_executor = JsonGetOr(j, "spark_executor", "");
  n.container = JsonGetOr(j, "container", "");
  n.gpus = j.contains("gpus") ? j["gpus"].dump() : "[]";
  n.feed_port = JsonGetOr(j, "feed_port", 0);
  n.conn = conn;
  n.registered_at = now;
  n.last_seen = now;
  nodes_[id] = std::move(n);
  executor_of_conn_[conn] = id;
  fx->messages.push_back(
      {conn, MessageType::kRegistered,
       json{{"num_nodes", options_.num_nodes}, {"registered", nodes_.size()}}.dump()});
  if (static_cast<int>(nodes_.size()) == options_.num_nodes) FormCluster(fx);
}

void ClusterState::FormCluster(Effects* fx) {
  const std::vector<Role> roles = AssignTensorFlowRoles(options_.num_nodes, options_.roles);
  std::vector<std::string> addresses;
  for (auto& [id, n] : nodes_) {  // ordered by executor id, 0..num_nodes-1
    n.role = roles[static_cast<size_t>(id)];
    addresses.push_back(n.host + ":" + std::to_string(n.port));
  }
  info_.emplace(roles, addresses);
  reserved_ = true;
  for (int conn : awaiting_cluster_) {
    if (NodeState* n = NodeOf(conn)) {
      fx->messages.push_back({conn, MessageType::kClusterSpec,
                              info_->NodeInfo(n->role, n->executor_id, options_.num_nodes,
                                              generation_)});
    }
  }
  awaiting_cluster_.clear();
}

void ClusterState::HandleHeartbeat(int conn, const std::string& payload, TimePoint now) {
  NodeState* n = NodeOf(conn);
  if (!n) return;
  n->last_seen = now;
  json j = json::parse(payload, nullptr, false);
  if (JsonGetOr(j, "state", "") == "running") {
    if (j.contains("tensorboard") && j["tensorboard"].is_string()) {
      n->tensorboard = j["tensorboard"].get<std::string>();
    }
    if (n->phase == NodeState::kRegistered) n->phase = NodeState::kRunning;
  }
}

void ClusterState::HandleExit(int conn, const std::string& payload, Effects* fx) {
  NodeState* n = NodeOf(conn);
  if (!n) return Reject(conn, Status::InvalidArgument("register first"), fx);
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object()) {
    return Reject(conn, Status::InvalidArgument("REPORT_EXIT needs a JSON object"), fx);
  }
  n->phase = NodeState::kExited;
  n->exit_code = JsonGetOr(j, "exit_code", -1);
  n->signal = JsonGetOr(j, "signal", 0);
  n->stopped = JsonGetOr(j, "stopped", false);
  n->traceback = JsonGetOr(j, "traceback", "");
  n->stderr_tail = JsonGetOr(j, "stderr_tail", "");
  n->reason = JsonGetOr(j, "reason", "");
  fx->messages.push_back({conn, MessageType::kReportAck, "{}"});
  const bool failed = !n->stopped && (n->exit_code != 0 || n->signal != 0);
  if (!failed) return StopServicesOrFinish(fx);
  std::string why = Describe(*n) + " failed with " +
                    (n->signal ? "signal " + std::to_string(n->signal)
                               : "exit code " + std::to_string(n->exit_code));
  if (!n->reason.empty()) why += " (" + n->reason + ")";
  if (!n->traceback.empty()) {
    why += ":\n" + n->traceback;
  } else if (!n->stderr_tail.empty()) {
    why += "; last lines of its stderr:\n" + n->stderr_tail;
  }
  Abort(why, fx);
  StopServicesOrFinish(fx);
}

void ClusterState::HandleBarrier(int conn, const std::string& payload, Effects* fx) {
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() ||
      !j.contains("executor_id") || !j["executor_id"].is_number_integer()) {
    return Reject(conn, Status::InvalidArgument("BARRIER needs name and executor_id"), fx);
  }
  if (!OfThisGeneration(conn, j, "BARRIER", fx)) return;
  if (aborted_) return Reject(conn, Status::Aborted("cluster aborted: " + abort_reason_), fx);
  const std::string name = j["name"].get<std::string>();
  auto& arrived = barrier_arrivals_[name];
  arrived.insert(j["executor_id"].get<int>());
  barrier_waiters_[name].push_back(conn);
  const int need = JsonGetOr(j, "count", options_.num_nodes);
  if (static_cast<int>(arrived.size()) < need) return;
  for (int waiter : barrier_waiters_[name]) {
    fx->messages.push_back({waiter, MessageType::kBarrierDone, json{{"name", name}}.dump()});
  }
  barrier_waiters_.erase(name);
  barrier_arrivals_.erase(name);
}

void ClusterState::HandleFeedSync(int conn, const std::string& payload, TimePoint now,
                                  Effects* fx) {
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object() || !j.contains("executor_id") || !j["executor_id"].is_number_integer() ||
      !j.contains("qname") || !j["qname"].is_string() || !j.contains("delivered") ||
      !j["delivered"].is_number_unsigned() || !j.contains("closed") ||
      !j["closed"].is_boolean()) {
    return Reject(
        conn, Status::InvalidArgument("FEED_SYNC needs executor_id, qname, delivered, closed"),
        fx);
  }
  if (!OfThisGeneration(conn, j, "FEED_SYNC", fx)) return;
  const int id = j["executor_id"].get<int>();
  auto node = nodes_.find(id);
  if (!reserved_ || node == nodes_.end() || !node->second.role.fed) {
    return Reject(conn,
                  Status::InvalidArgument("FEED_SYNC from executor " + std::to_string(id) +
                                          ", which is not a worker of this cluster"),
                  fx);
  }
  UpdateInput(node->second, j, now);
  auto& feed = feeds_[j["qname"].get<std::string>()];
  feed[id] = {j["delivered"].get<uint64_t>(), j["closed"].get<bool>(), std::move(j)};
  // The watermark over every fed node; one that has not reported counts as 0, open.
  uint64_t min_delivered = UINT64_MAX;
  bool all_closed = true;
  for (const auto& [eid, n] : nodes_) {
    if (!n.role.fed) continue;
    auto it = feed.find(eid);
    if (it == feed.end()) {
      min_delivered = 0;
      all_closed = false;
      continue;
    }
    min_delivered = std::min(min_delivered, it->second.delivered);
    all_closed = all_closed && it->second.closed;
  }
  if (min_delivered == UINT64_MAX) min_delivered = 0;
  fx->messages.push_back(
      {conn, MessageType::kFeedState,
       json{{"min_delivered", min_delivered}, {"all_closed", all_closed}}.dump()});
}

// Placement rule: a partition asked for again (a retried or speculative task) goes where
// it went; a new one goes to a fed node on the asking task's host when one has fewer
// than ceil(partitions / W) of the job's partitions, else to the node with the fewest,
// ties to the lowest feed index. So no node gets more than ceil(partitions / W) (lockstep
// training drops no more than it would with partition i -> node i mod W), and several
// nodes on one host share that host's partitions.
void ClusterState::HandleFeedAssign(int conn, const std::string& payload, Effects* fx) {
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object() || !j.contains("feed") || !j["feed"].is_number_unsigned() ||
      !j.contains("partition") || !j["partition"].is_number_integer() ||
      !j.contains("partitions") || !j["partitions"].is_number_integer() ||
      !j.contains("host") || !j["host"].is_string()) {
    return Reject(conn,
                  Status::InvalidArgument("FEED_ASSIGN needs feed, partition, partitions, host"),
                  fx);
  }
  if (!OfThisGeneration(conn, j, "FEED_ASSIGN", fx)) return;
  const int64_t partition = j["partition"].get<int64_t>();
  const int64_t partitions = j["partitions"].get<int64_t>();
  if (partitions < 1 || partition < 0 || partition >= partitions) {
    return Reject(conn,
                  Status::InvalidArgument("FEED_ASSIGN: partition " + std::to_string(partition) +
                                          " is outside 0.." + std::to_string(partitions - 1)),
                  fx);
  }
  std::vector<const NodeState*> fed;
  for (const auto& [id, n] : nodes_) {
    if (n.role.fed) fed.push_back(&n);
  }
  if (!reserved_ || fed.empty()) {
    return Reject(conn, Status::Unavailable("FEED_ASSIGN before the cluster has workers"), fx);
  }
  FeedPlacement& p = placements_[j["feed"].get<uint64_t>()];
  auto known = p.target.find(partition);
  int chosen = known == p.target.end() ? -1 : known->second;
  if (chosen < 0) {
    const auto workers = static_cast<int64_t>(fed.size());
    const int64_t cap = (partitions + workers - 1) / workers;
    const std::string host = j["host"].get<std::string>();
    const NodeState* best = nullptr;
    bool best_local = false;
    for (const NodeState* n : fed) {
      const int given = p.count[n->executor_id];
      const bool local = n->host == host && given < cap;
      const auto key = [&](const NodeState* m, bool m_local) {
        return std::make_tuple(!m_local, p.count[m->executor_id], m->role.feed_index);
      };
      if (!best || key(n, local) < key(best, best_local)) {
        best = n;
        best_local = local;
      }
    }
    chosen = best->executor_id;
    p.target[partition] = chosen;
    ++p.count[chosen];
  }
  fx->messages.push_back({conn, MessageType::kFeedTarget, json{{"executor_id", chosen}}.dump()});
}

void ClusterState::OnClosed(int conn, Effects* fx) {
  awaiting_cluster_.erase(conn);
  for (auto& [name, waiting] : barrier_waiters_) std::erase(waiting, conn);
  NodeState* n = NodeOf(conn);
  executor_of_conn_.erase(conn);
  if (!n || n->conn != conn) return;
  n->conn = -1;
  if (n->phase == NodeState::kExited) return;
  n->phase = NodeState::kLost;
  if (reserved_) {
    Abort(Describe(*n) + " was lost: its agent's connection closed without an exit "
                         "report (process killed, executor lost, or host down)",
          fx);
  }
  StopServicesOrFinish(fx);
}

void ClusterState::Abort(const std::string& reason, Effects* fx) {
  if (aborted_) return;
  aborted_ = true;
  abort_reason_ = reason;
  const std::string payload = json{{"reason", reason}}.dump();
  for (const auto& [conn, id] : executor_of_conn_) {
    fx->messages.push_back({conn, MessageType::kAbort, payload});
  }
  const std::string error = ErrorPayload(Status::Aborted("cluster aborted: " + reason));
  for (const auto& [name, waiting] : barrier_waiters_) {
    for (int conn : waiting) fx->messages.push_back({conn, MessageType::kError, error});
  }
  barrier_waiters_.clear();
  barrier_arrivals_.clear();
}

void ClusterState::OnTick(TimePoint now, Effects* fx) {
  now_ = now;
  for (auto& [id, n] : nodes_) {
    if ((n.phase == NodeState::kRegistered || n.phase == NodeState::kRunning) && n.conn >= 0 &&
        now - n.last_seen > options_.heartbeat_timeout) {
      n.phase = NodeState::kLost;
      fx->close.push_back(n.conn);
      executor_of_conn_.erase(n.conn);
      n.conn = -1;
      Abort(Describe(n) + " sent no heartbeat for " +
                std::to_string(options_.heartbeat_timeout.count() / 1000) +
                " s (hung, or its host is overloaded)",
            fx);
    }
  }
  FindStragglers(now, fx);
  if (history_.empty() || now - history_at_ >= kHistoryInterval) RecordHistory(now);
  StopServicesOrFinish(fx);
}

namespace {

// By NodeState::Phase.
constexpr const char* kPhases[] = {"registered", "running", "exited", "lost"};

double Seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

uint64_t UintOr(const json& j, const char* key) {
  return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 0;
}

}  // namespace

void ClusterState::UpdateInput(NodeState& n, const json& report, TimePoint now) {
  json in = {{"qname", report["qname"]},
             {"rows_fed", UintOr(report, "delivered")},
             {"rows_taken", UintOr(report, "consumed")},
             {"rows_dropped", UintOr(report, "dropped")},
             {"batches", UintOr(report, "batches")},
             {"wait_s", UintOr(report, "wait_us") / 1e6},
             {"ring_fill", report.contains("ring_fill") && report["ring_fill"].is_number()
                               ? report["ring_fill"].get<double>()
                               : 0.0},
             {"rows_per_sec", nullptr},
             {"stall", nullptr}};
  const json& prev = n.input;
  const double secs = Seconds(now - n.input_at);
  if (prev.is_object() && prev["qname"] == in["qname"] &&
      in["rows_taken"].get<uint64_t>() >= prev["rows_taken"].get<uint64_t>()) {
    if (secs < 0.5) return;  // too close to the last one for a rate
    in["rows_per_sec"] =
        (in["rows_taken"].get<uint64_t>() - prev["rows_taken"].get<uint64_t>()) / secs;
    in["stall"] = std::clamp(
        (in["wait_s"].get<double>() - prev["wait_s"].get<double>()) / secs, 0.0, 1.0);
  }
  n.input = std::move(in);
  n.input_at = now;
}

std::string ClusterState::NodeName(const NodeState& n) {
  return n.role.job_name.empty() ? "node" + std::to_string(n.executor_id)
                                 : n.role.job_name + ":" + std::to_string(n.role.task_index);
}

void ClusterState::RecordHistory(TimePoint now) {
  json nodes = json::object();
  for (const auto& [id, n] : nodes_) {
    json s = {{"step", nullptr}, {"steps_per_sec", nullptr}, {"loss", nullptr},
              {"rows_per_sec", nullptr}, {"stall", nullptr}, {"ring_fill", nullptr}};
    if (n.training.is_object()) {
      s["step"] = n.training["step"];
      s["steps_per_sec"] = n.training["steps_per_sec"];
      if (n.training["metrics"].contains("loss")) s["loss"] = n.training["metrics"]["loss"];
    }
    if (n.input.is_object()) {
      s["rows_per_sec"] = n.input["rows_per_sec"];
      s["stall"] = n.input["stall"];
      s["ring_fill"] = n.input["ring_fill"];
    }
    nodes[NodeName(n)] = std::move(s);
  }
  json sample = {{"t", Seconds(now - started_)}, {"generation", generation_}, {"nodes", nodes}};
  if (history_.size() < kHistoryPoints) {
    history_.push_back(std::move(sample));
  } else {
    history_[history_next_] = std::move(sample);
    history_next_ = (history_next_ + 1) % kHistoryPoints;
  }
  history_at_ = now;
}

std::string ClusterState::HistoryJson() const {
  json samples = json::array();
  for (size_t i = 0; i < history_.size(); ++i) {
    samples.push_back(history_[(history_next_ + i) % history_.size()]);
  }
  return json{{"interval_s", Seconds(kHistoryInterval)}, {"samples", samples}}.dump();
}

void ClusterState::FindStragglers(TimePoint now, Effects* fx) {
  if (options_.straggler_fraction <= 0) return;
  std::vector<NodeState*> training;
  std::vector<double> rates;
  for (auto& [id, n] : nodes_) {
    if (n.phase != NodeState::kRunning || n.role.serves_until_stopped ||
        !n.training.is_object() || !n.training["steps_per_sec"].is_number()) {
      continue;
    }
    training.push_back(&n);
    rates.push_back(n.training["steps_per_sec"].get<double>());
  }
  if (training.size() < 2) return;
  std::sort(rates.begin(), rates.end());
  const double median = (rates[(rates.size() - 1) / 2] + rates[rates.size() / 2]) / 2;
  auto fixed = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.1f", v);
    return std::string(buf);
  };
  for (NodeState* n : training) {
    const double rate = n->training["steps_per_sec"].get<double>();
    const std::string rates_text = fixed(rate) + " steps/s against a median of " +
                                   fixed(median) + " over the " +
                                   std::to_string(training.size()) + " training nodes";
    if (rate < options_.straggler_fraction * median) {
      if (!n->slow) {
        n->slow = true;
        n->slow_since = now;
      }
      if (!n->straggler && now - n->slow_since >= options_.straggler_after) {
        n->straggler = true;
        const auto secs =
            std::chrono::duration_cast<std::chrono::seconds>(now - n->slow_since).count();
        fx->warnings.push_back(Describe(*n) + " is a straggler: " + rates_text + " (under " +
                               fixed(options_.straggler_fraction * 100) + "% of it for " +
                               std::to_string(secs) + " s)");
      }
    } else {
      if (n->straggler) {
        fx->warnings.push_back(Describe(*n) + " is no longer a straggler: " + rates_text);
      }
      n->slow = n->straggler = false;
    }
  }
}

void ClusterState::StopServicesOrFinish(Effects* fx) {
  if (!reserved_ || finished_) return;
  bool workers_done = true, all_done = true;
  for (const auto& [id, n] : nodes_) {
    const bool done = n.phase == NodeState::kExited || n.phase == NodeState::kLost;
    all_done = all_done && done;
    if (!n.role.serves_until_stopped) workers_done = workers_done && done;
  }
  if (all_done) {
    finished_ = true;
    return;
  }
  if (!workers_done) return;
  const auto stop = [&](bool evaluators) {
    for (const auto& [id, n] : nodes_) {
      if (n.role.serves_until_stopped && n.conn >= 0 &&
          (n.role.job_name == "evaluator") == evaluators) {
        fx->messages.push_back({n.conn, MessageType::kStop, "{}"});
      }
    }
  };
  if (!services_stopping_) {
    services_stopping_ = true;
    workers_done_at_ = now_;
    stop(false);
  }
  if (!evaluators_stopping_ && (aborted_ || now_ - workers_done_at_ >= evaluator_grace_)) {
    evaluators_stopping_ = true;
    stop(true);
  }
}

void ClusterState::HandleNodeOutput(int conn, const std::string& payload, Effects* fx) {
  NodeState* n = NodeOf(conn);
  if (!n) return Reject(conn, Status::InvalidArgument("register first"), fx);
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object() || !j.contains("lines") || !j["lines"].is_array()) {
    return Reject(conn, Status::InvalidArgument("NODE_OUTPUT needs lines"), fx);
  }
  if (!OfThisGeneration(conn, j, "NODE_OUTPUT", fx)) return;
  const std::string node = n->role.job_name.empty()
                               ? "executor:" + std::to_string(n->executor_id)
                               : n->role.job_name + ":" + std::to_string(n->role.task_index);
  for (const auto& line : j["lines"]) {
    if (!line.is_array() || line.size() != 2 || !line[0].is_string() || !line[1].is_string() ||
        (line[0] != "stdout" && line[0] != "stderr")) {
      return Reject(conn, Status::InvalidArgument("NODE_OUTPUT lines are [stream, text]"), fx);
    }
    fx->output.push_back({node, generation_, line[0].get<std::string>(),
                          line[1].get<std::string>()});
  }
}

void ClusterState::HandleNodeMetrics(int conn, const std::string& payload, TimePoint now,
                                     Effects* fx) {
  NodeState* n = NodeOf(conn);
  if (!n) return Reject(conn, Status::InvalidArgument("register first"), fx);
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer() ||
      (j.contains("metrics") && !j["metrics"].is_object())) {
    return Reject(conn, Status::InvalidArgument("NODE_METRICS needs an integer step"), fx);
  }
  if (!OfThisGeneration(conn, j, "NODE_METRICS", fx)) return;
  json t = {{"step", j["step"]}, {"epoch", JsonGetOr(j, "epoch", 0)},
            {"metrics", json::object()}, {"steps_per_sec", nullptr}};
  if (j.contains("metrics")) {
    for (const auto& [name, value] : j["metrics"].items()) {
      if (value.is_number()) t["metrics"][name] = value;  // anything else is dropped
    }
  }
  if (n->training.is_object()) {
    const double secs = std::chrono::duration<double>(now - n->training_at).count();
    const int64_t steps = t["step"].get<int64_t>() - n->training["step"].get<int64_t>();
    t["steps_per_sec"] = secs > 0 && steps >= 0 ? json(steps / secs)
                                                : n->training["steps_per_sec"];
  }
  // Examples a second, when the node says its batch size (ctx.report(batch_size=...)),
  // which is kept beside the metrics, not among them.
  t["batch_size"] = nullptr;
  if (t["metrics"].contains("batch_size")) {
    t["batch_size"] = t["metrics"]["batch_size"];
    t["metrics"].erase("batch_size");
  }
  t["examples_per_sec"] = t["batch_size"].is_number() && t["steps_per_sec"].is_number()
                              ? json(t["steps_per_sec"].get<double>() *
                                     t["batch_size"].get<double>())
                              : json(nullptr);
  n->training = std::move(t);
  n->training_at = now;
}

std::string ClusterState::Describe(const NodeState& n) const {
  const std::string role = n.role.job_name.empty()
                               ? "node"
                               : n.role.job_name + ":" + std::to_string(n.role.task_index);
  std::string where = "executor " + std::to_string(n.executor_id) + " on " + n.host;
  if (!n.spark_executor.empty()) where += ", Spark executor " + n.spark_executor;
  if (!n.container.empty()) where += ", " + n.container;
  return role + " (" + where + ")";
}

std::string ClusterState::ReservationTimeoutMessage(TimePoint now, int port) const {
  std::string missing;
  for (int i = 0; i < options_.num_nodes; ++i) {
    if (!nodes_.count(i)) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  }
  const auto waited = std::chrono::duration_cast<std::chrono::seconds>(now - created_);
  return "reservation timed out after " + std::to_string(waited.count()) + " s: " +
         std::to_string(nodes_.size()) + " of " + std::to_string(options_.num_nodes) +
         " nodes registered; missing executors: " + missing +
         ". Usual causes: fewer executors than num_executors, more than one task slot per "
         "executor (set spark.executor.cores = spark.task.cpus), dynamic allocation "
         "(set spark.dynamicAllocation.enabled=false), or executors that cannot reach the "
         "driver on port " +
         std::to_string(port);
}

std::string ClusterState::RunningNodes() const {
  std::string running;
  for (const auto& [id, n] : nodes_) {
    if (n.phase != NodeState::kExited) running += (running.empty() ? "" : ", ") + Describe(n);
  }
  return running;
}

std::string ClusterState::StatusJson() const {
  json nodes = json::array();
  for (const auto& [id, n] : nodes_) {
    nodes.push_back({{"executor_id", id}, {"host", n.host}, {"port", n.port}, {"pid", n.pid},
                     {"job_name", n.role.job_name}, {"task_index", n.role.task_index},
                     {"is_chief", n.role.is_chief}, {"fed", n.role.fed},
                     {"feed_index", n.role.feed_index}, {"phase", kPhases[n.phase]},
                     {"exit_code", n.exit_code}, {"signal", n.signal}, {"stopped", n.stopped},
                     {"traceback", n.traceback}, {"tensorboard", n.tensorboard},
                     {"feed_port", n.feed_port}, {"spark_executor", n.spark_executor},
                     {"container", n.container}, {"reason", n.reason},
                     {"training", n.training}, {"straggler", n.straggler},
                     {"name", NodeName(n)}, {"input", n.input},
                     {"uptime_s", Seconds(now_ - n.registered_at)},
                     {"heartbeat_age_s", Seconds(now_ - n.last_seen)}});
  }
  json feeds = json::object();
  for (const auto& [qname, per_node] : feeds_) {
    json q = json::object();
    for (const auto& [id, report] : per_node) q[std::to_string(id)] = report.payload;
    feeds[qname] = q;
  }
  return json{{"num_nodes", options_.num_nodes},
              {"generation", generation_},
              {"stale_messages", stale_},
              {"registered", nodes_.size()},
              {"reserved", reserved_},
              {"finished", finished_},
              {"aborted", aborted_},
              {"abort_reason", abort_reason_},
              {"rejected_connections", rejected_},
              {"cluster_spec", info_ ? json::parse(info_->spec()) : json::object()},
              {"nodes", nodes},
              {"feeds", feeds},
              {"uptime_s", Seconds(now_ - started_)},
              {"totals", Totals()}}
      .dump();
}

json ClusterState::Totals() const {
  uint64_t fed = 0, taken = 0, dropped = 0, batches = 0;
  double rows_per_sec = 0, steps_per_sec = 0;
  int stragglers = 0, errors = 0;
  json phases = {{"registered", 0}, {"running", 0}, {"exited", 0}, {"lost", 0}};
  for (const auto& [id, n] : nodes_) {
    phases[kPhases[n.phase]] = phases[kPhases[n.phase]].get<int>() + 1;
    stragglers += n.straggler;
    errors += !n.traceback.empty() || (n.phase == NodeState::kExited && !n.stopped &&
                                       (n.exit_code != 0 || n.signal != 0));
    if (n.input.is_object()) {
      fed += n.input["rows_fed"].get<uint64_t>();
      taken += n.input["rows_taken"].get<uint64_t>();
      dropped += n.input["rows_dropped"].get<uint64_t>();
      batches += n.input["batches"].get<uint64_t>();
      if (n.input["rows_per_sec"].is_number()) rows_per_sec += n.input["rows_per_sec"].get<double>();
    }
    if (n.role.is_chief && n.training.is_object() && n.training["steps_per_sec"].is_number()) {
      steps_per_sec = n.training["steps_per_sec"].get<double>();
    }
  }
  return {{"nodes", phases},         {"rows_fed", fed},   {"rows_taken", taken},
          {"rows_dropped", dropped}, {"batches", batches}, {"rows_per_sec", rows_per_sec},
          {"chief_steps_per_sec", steps_per_sec}, {"stragglers", stragglers},
          {"errors", errors}};
}

}  // namespace sparktf::cluster
