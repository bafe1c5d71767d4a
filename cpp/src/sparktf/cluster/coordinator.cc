#include "sparktf/cluster/coordinator.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <nlohmann/json.hpp>
#include <set>

namespace sparktf::cluster {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

struct Coordinator::Conn {
  int id = 0;
  UniqueFd fd;
  FrameDecoder decoder;
  std::string out;
  bool authenticated = false;
  bool closing = false;  // close once `out` is flushed
  int executor_id = -1;  // set by REGISTER: this is a node agent
  bool awaiting_cluster = false;
  Clock::time_point opened;
  explicit Conn(size_t max_frame) : decoder(max_frame) {}
};


Coordinator::Coordinator(const CoordinatorOptions& options) : options_(options) {}

Result<std::unique_ptr<Coordinator>> Coordinator::Start(const CoordinatorOptions& options) {
  if (options.num_nodes <= 0) {
    return Status::InvalidArgument("num_nodes must be positive");
  }
  if (options.token.empty() || options.token.size() > kMaxTokenSize) {
    return Status::InvalidArgument("the cluster token must have 1.." +
                                   std::to_string(kMaxTokenSize) + " bytes");
  }
  if (!options.master_node.empty() && options.master_node != "chief" &&
      options.master_node != "master") {
    return Status::InvalidArgument("master_node must be 'chief' or 'master', got '" +
                                   options.master_node + "'");
  }
  const int special = options.num_ps + (options.master_node.empty() ? 0 : 1) +
                      (options.eval_node ? 1 : 0);
  if (options.num_ps < 0 || special > options.num_nodes ||
      (special == options.num_nodes && options.master_node.empty())) {
    return Status::InvalidArgument(
        "num_executors=" + std::to_string(options.num_nodes) + " leaves no worker after " +
        std::to_string(options.num_ps) + " ps" + (options.master_node.empty() ? "" : ", a chief") +
        (options.eval_node ? ", an evaluator" : ""));
  }
  std::unique_ptr<Coordinator> c(new Coordinator(options));
  ASSIGN_OR_RETURN(c->listen_fd_, ListenTcp(options.bind_host, options.port));
  RETURN_NOT_OK(SetNonBlocking(c->listen_fd_.get(), true));
  c->port_ = LocalPort(c->listen_fd_.get());
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) return Status::FromErrno("pipe", errno);
  c->wake_read_.Reset(pipe_fds[0]);
  c->wake_write_.Reset(pipe_fds[1]);
  c->thread_ = std::thread([raw = c.get()] { raw->Loop(); });
  return c;
}

Coordinator::~Coordinator() { Shutdown(); }

void Coordinator::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shutdown_ && !thread_.joinable()) return;
    shutdown_ = true;
  }
  Wake();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  conns_.clear();
  listen_fd_.Reset();
  cv_.notify_all();
}

void Coordinator::Wake() {
  char b = 1;
  if (wake_write_.valid()) (void)!::write(wake_write_.get(), &b, 1);
}

void Coordinator::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<pollfd> fds;
  std::vector<int> ids;
  while (!shutdown_) {
    fds.clear();
    ids.clear();
    fds.push_back({wake_read_.get(), POLLIN, 0});
    fds.push_back({listen_fd_.get(), POLLIN, 0});
    for (auto& [id, c] : conns_) {
      short ev = POLLIN;
      if (!c->out.empty()) ev |= POLLOUT;
      fds.push_back({c->fd.get(), ev, 0});
      ids.push_back(id);
    }
    lock.unlock();
    int rc = ::poll(fds.data(), fds.size(), 200);
    lock.lock();
    if (shutdown_) break;
    if (rc < 0 && errno != EINTR) break;
    if (fds[0].revents & POLLIN) {
      char buf[64];
      while (::read(wake_read_.get(), buf, sizeof(buf)) > 0) {
      }
    }
    if (fds[1].revents & POLLIN) Accept();
    for (size_t i = 0; i < ids.size(); ++i) {
      auto it = conns_.find(ids[i]);
      if (it == conns_.end()) continue;
      Conn& c = *it->second;
      const short re = fds[i + 2].revents;
      if (re & (POLLIN | POLLHUP | POLLERR)) ReadFrom(c);
      if (conns_.count(ids[i]) && (re & POLLOUT)) Flush(c);
    }
    // Flush what handlers queued for connections that were not polled for output.
    for (auto it = conns_.begin(); it != conns_.end();) {
      Conn& c = *it->second;
      if (!c.out.empty()) Flush(c);
      if (c.closing && c.out.empty()) {
        ++it;
        CloseConn(c);
      } else {
        ++it;
      }
    }
    for (auto it = conns_.begin(); it != conns_.end();) {
      if (!it->second->fd.valid()) {
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
    CheckTimeouts();
    UpdateCompletion();
  }
}

void Coordinator::Accept() {
  while (true) {
    int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    auto c = std::make_unique<Conn>(options_.max_frame_size);
    c->id = next_conn_id_++;
    c->fd.Reset(fd);
    c->opened = Clock::now();
    conns_[c->id] = std::move(c);
  }
}

void Coordinator::ReadFrom(Conn& c) {
  char buf[65536];
  bool peer_closed = false;
  while (c.fd.valid()) {
    ssize_t n = ::recv(c.fd.get(), buf, sizeof(buf), 0);
    if (n > 0) {
      c.decoder.Feed({buf, static_cast<size_t>(n)});
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    peer_closed = true;  // closed by the peer, or an error
    break;
  }
  // Frames that arrived before the close count (an agent reports its exit and
  // closes at once); only then is the connection closed.
  Frame f;
  while (c.fd.valid() && !c.closing) {
    bool have = false;
    Status st = c.decoder.Next(&f, &have);
    if (!st.ok()) {
      Reject(c, st);
      break;
    }
    if (!have) break;
    if (!c.authenticated) {
      // Nothing but the token is looked at before authentication.
      if (f.type != MessageType::kHello || !TokensEqual(f.payload, options_.token)) {
        Reject(c, Status::Unauthenticated("bad or missing cluster token"));
        return;
      }
      c.authenticated = true;
      Send(c, MessageType::kWelcome, "{}");
      continue;
    }
    Handle(c, f);
  }
  if (peer_closed) CloseConn(c);
}

void Coordinator::Flush(Conn& c) {
  while (!c.out.empty() && c.fd.valid()) {
    ssize_t n = ::send(c.fd.get(), c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      c.out.erase(0, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    CloseConn(c);
    return;
  }
}

void Coordinator::Send(Conn& c, MessageType type, const std::string& payload) {
  AppendFrame(type, payload, &c.out);
}

void Coordinator::Reject(Conn& c, const Status& why) {
  ++rejected_;
  Send(c, MessageType::kError, ErrorPayload(why));
  c.closing = true;
}

void Coordinator::CloseConn(Conn& c) {
  if (!c.fd.valid()) return;
  c.fd.Reset();
  if (c.executor_id < 0) return;
  auto it = nodes_.find(c.executor_id);
  if (it == nodes_.end() || it->second.conn != c.id) return;
  NodeState& n = it->second;
  n.conn = -1;
  if (n.phase == NodeState::kExited) return;
  n.phase = NodeState::kLost;
  if (reserved_) {
    AbortLocked(Describe(n) + " was lost: its agent's connection closed without an exit "
                "report (process killed, executor lost, or host down)");
  }
  cv_.notify_all();
}

std::string Coordinator::Describe(const NodeState& n) const {
  std::string role = n.job_name.empty() ? "node" : n.job_name + ":" + std::to_string(n.task_index);
  std::string where = "executor " + std::to_string(n.executor_id) + " on " + n.host;
  if (!n.spark_executor.empty()) where += ", Spark executor " + n.spark_executor;
  if (!n.container.empty()) where += ", " + n.container;
  return role + " (" + where + ")";
}

void Coordinator::Handle(Conn& c, const Frame& f) {
  switch (f.type) {
    case MessageType::kRegister: return HandleRegister(c, f.payload);
    case MessageType::kAwaitCluster:
      if (c.executor_id < 0) return Reject(c, Status::InvalidArgument("register first"));
      if (reserved_) {
        Send(c, MessageType::kClusterSpec, ClusterSpecFor(nodes_.at(c.executor_id)));
      } else {
        c.awaiting_cluster = true;
      }
      return;
    case MessageType::kHeartbeat: {
      if (c.executor_id < 0) return;
      NodeState& n = nodes_.at(c.executor_id);
      n.last_seen = Clock::now();
      json j = json::parse(f.payload, nullptr, false);
      if (j.is_object() && j.value("state", "") == "running") {
        if (j.contains("tensorboard") && j["tensorboard"].is_string()) {
          n.tensorboard = j["tensorboard"].get<std::string>();
        }
        if (n.phase == NodeState::kRegistered) {
          n.phase = NodeState::kRunning;
          cv_.notify_all();
        }
      }
      return;
    }
    case MessageType::kReportExit: return HandleExit(c, f.payload);
    case MessageType::kBarrier: return HandleBarrier(c, f.payload);
    case MessageType::kFeedSync: return HandleFeedSync(c, f.payload);
    case MessageType::kGetStatus: return Send(c, MessageType::kStatus, StatusJsonLocked());
    default:
      return Reject(c, Status::InvalidArgument("unexpected message " +
                                               std::string(MessageTypeName(f.type))));
  }
}

void Coordinator::HandleRegister(Conn& c, const std::string& payload) {
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object() || !j.contains("executor_id") || !j["executor_id"].is_number_integer() ||
      !j.contains("host") || !j["host"].is_string() || !j.contains("port") ||
      !j["port"].is_number_integer()) {
    return Reject(c, Status::InvalidArgument("REGISTER needs executor_id, host and port"));
  }
  const int id = j["executor_id"].get<int>();
  if (id < 0 || id >= options_.num_nodes) {
    return Reject(c, Status::InvalidArgument("executor_id " + std::to_string(id) +
                                             " is outside 0.." +
                                             std::to_string(options_.num_nodes - 1)));
  }
  if (reserved_) {
    return Reject(c, Status::Aborted("executor " + std::to_string(id) +
                                     " registered after the cluster was formed (a retried "
                                     "task?); the cluster must be restarted"));
  }
  auto it = nodes_.find(id);
  if (it != nodes_.end() && it->second.conn >= 0) {
    return Reject(c, Status::InvalidArgument(
                         "executor " + std::to_string(id) +
                         " registered twice (more than one task slot per executor?)"));
  }
  NodeState n;
  n.executor_id = id;
  n.host = j["host"].get<std::string>();
  n.port = j["port"].get<int>();
  n.pid = j.value("pid", 0);
  auto optional_string = [&j](const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  n.spark_executor = optional_string("spark_executor");
  n.container = optional_string("container");
  n.gpus = j.contains("gpus") ? j["gpus"].dump() : "[]";
  n.feed_port = j.contains("feed_port") && j["feed_port"].is_number_integer() ? j["feed_port"].get<int>() : 0;
  n.conn = c.id;
  n.last_seen = Clock::now();
  nodes_[id] = std::move(n);
  c.executor_id = id;
  Send(c, MessageType::kRegistered,
       json{{"num_nodes", options_.num_nodes}, {"registered", nodes_.size()}}.dump());
  if (static_cast<int>(nodes_.size()) == options_.num_nodes) AssignRoles();
  cv_.notify_all();
}

void Coordinator::AssignRoles() {
  int i = 0, workers = 0;
  bool chief = options_.master_node.empty(), evaluator = !options_.eval_node;
  json spec = json::object();
  for (auto& [id, n] : nodes_) {  // ordered by executor id
    if (i < options_.num_ps) {
      n.job_name = "ps";
      n.task_index = i;
    } else if (!chief) {
      n.job_name = options_.master_node;
      n.task_index = 0;
      chief = true;
    } else if (!evaluator) {
      n.job_name = "evaluator";
      n.task_index = 0;
      evaluator = true;
    } else {
      n.job_name = "worker";
      n.task_index = workers++;
    }
    n.worker_num = i++;
    spec[n.job_name].push_back(n.host + ":" + std::to_string(n.port));
  }
  cluster_spec_ = spec.dump();
  reserved_ = true;
  for (auto& [cid, c] : conns_) {
    if (c->awaiting_cluster && c->executor_id >= 0) {
      Send(*c, MessageType::kClusterSpec, ClusterSpecFor(nodes_.at(c->executor_id)));
      c->awaiting_cluster = false;
    }
  }
}

std::string Coordinator::ClusterSpecFor(const NodeState& n) const {
  json spec = json::parse(cluster_spec_);
  json tf_cluster = spec;
  tf_cluster.erase("evaluator");  // TensorFlow wants the evaluator outside the cluster
  int num_workers = 0;
  for (const char* job : {"worker", "chief", "master"}) {
    if (spec.contains(job)) num_workers += static_cast<int>(spec[job].size());
  }
  json tf_config = {{"cluster", tf_cluster},
                    {"task", {{"type", n.job_name}, {"index", n.task_index}}},
                    {"environment", "cloud"}};
  return json{{"cluster_spec", spec},
              {"job_name", n.job_name},
              {"task_index", n.task_index},
              {"worker_num", n.worker_num},
              {"executor_id", n.executor_id},
              {"num_workers", num_workers},
              {"num_nodes", options_.num_nodes},
              {"tf_config", tf_config.dump()}}
      .dump();
}

void Coordinator::HandleExit(Conn& c, const std::string& payload) {
  if (c.executor_id < 0) return Reject(c, Status::InvalidArgument("register first"));
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object()) return Reject(c, Status::InvalidArgument("REPORT_EXIT needs a JSON object"));
  NodeState& n = nodes_.at(c.executor_id);
  n.phase = NodeState::kExited;
  n.exit_code = j.value("exit_code", -1);
  n.signal = j.value("signal", 0);
  n.stopped = j.value("stopped", false);
  n.traceback = j.value("traceback", "");
  n.stderr_tail = j.value("stderr_tail", "");
  n.reason = j.contains("reason") && j["reason"].is_string() ? j["reason"].get<std::string>() : "";
  Send(c, MessageType::kReportAck, "{}");
  const bool failed = !n.stopped && (n.exit_code != 0 || n.signal != 0);
  if (failed) {
    std::string why = Describe(n) + " failed with " +
                      (n.signal ? "signal " + std::to_string(n.signal)
                                : "exit code " + std::to_string(n.exit_code));
    if (!n.traceback.empty()) {
      why += ":\n" + n.traceback;
    } else if (!n.stderr_tail.empty()) {
      why += "; last lines of its stderr:\n" + n.stderr_tail;
    }
    AbortLocked(why);
  }
  cv_.notify_all();
}

void Coordinator::HandleBarrier(Conn& c, const std::string& payload) {
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string() ||
      !j.contains("executor_id") || !j["executor_id"].is_number_integer()) {
    return Reject(c, Status::InvalidArgument("BARRIER needs name and executor_id"));
  }
  if (aborted_) return Reject(c, Status::Aborted("cluster aborted: " + abort_reason_));
  const std::string name = j["name"].get<std::string>();
  auto& arrived = barrier_arrivals_[name];
  const int eid = j["executor_id"].get<int>();
  if (std::find(arrived.begin(), arrived.end(), eid) == arrived.end()) arrived.push_back(eid);
  barriers_[name].push_back(c.id);
  const int need = j.value("count", options_.num_nodes);
  if (static_cast<int>(arrived.size()) >= need) {
    for (int cid : barriers_[name]) {
      auto it = conns_.find(cid);
      if (it != conns_.end()) Send(*it->second, MessageType::kBarrierDone, json{{"name", name}}.dump());
    }
    barriers_.erase(name);
    barrier_arrivals_.erase(name);
  }
}

void Coordinator::AbortLocked(const std::string& reason) {
  if (aborted_) return;
  aborted_ = true;
  abort_reason_ = reason;
  const std::string payload = json{{"reason", reason}}.dump();
  for (auto& [id, c] : conns_) {
    if (c->executor_id >= 0 && c->fd.valid()) Send(*c, MessageType::kAbort, payload);
    for (auto& [name, waiting] : barriers_) {
      if (std::find(waiting.begin(), waiting.end(), id) != waiting.end()) {
        Send(*c, MessageType::kError, ErrorPayload(Status::Aborted("cluster aborted: " + reason)));
      }
    }
  }
  barriers_.clear();
  Wake();
  cv_.notify_all();
}

void Coordinator::Abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  AbortLocked(reason);
}

// Nodes that serve until told to stop: ps and evaluator, and with
// ParameterServerStrategy (ps nodes plus a chief) the workers too, which are
// servers that the chief drives.
bool Coordinator::IsServiceRole(const std::string& job) const {
  if (job == "ps" || job == "evaluator") return true;
  return job == "worker" && options_.num_ps > 0 && !options_.master_node.empty();
}

void Coordinator::UpdateCompletion() {
  if (!reserved_ || finished_) return;
  bool workers_done = true, all_done = true;
  for (const auto& [id, n] : nodes_) {
    const bool done = n.phase == NodeState::kExited || n.phase == NodeState::kLost;
    all_done = all_done && done;
    if (!IsServiceRole(n.job_name)) workers_done = workers_done && done;
  }
  if (workers_done && !services_stopping_ && !all_done) {
    services_stopping_ = true;
    for (auto& [id, n] : nodes_) {
      if (!IsServiceRole(n.job_name) || n.conn < 0) continue;
      auto it = conns_.find(n.conn);
      if (it != conns_.end()) Send(*it->second, MessageType::kStop, "{}");
    }
  }
  if (all_done) {
    finished_ = true;
    cv_.notify_all();
  }
}

void Coordinator::CheckTimeouts() {
  const auto now = Clock::now();
  for (auto& [id, c] : conns_) {
    if (!c->authenticated && !c->closing && now - c->opened > options_.hello_timeout) {
      Reject(*c, Status::DeadlineExceeded("no HELLO within " +
                                          std::to_string(options_.hello_timeout.count()) + " ms"));
    }
  }
  for (auto& [id, n] : nodes_) {
    if ((n.phase == NodeState::kRegistered || n.phase == NodeState::kRunning) && n.conn >= 0 &&
        now - n.last_seen > options_.heartbeat_timeout) {
      n.phase = NodeState::kLost;
      auto it = conns_.find(n.conn);
      if (it != conns_.end()) it->second->closing = true;
      n.conn = -1;
      AbortLocked(Describe(n) + " sent no heartbeat for " +
                  std::to_string(options_.heartbeat_timeout.count() / 1000) +
                  " s (hung, or its host is overloaded)");
    }
  }
}

Status Coordinator::WaitReserved(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return reserved_ || aborted_ || shutdown_; });
  if (reserved_) return Status::OK();
  if (aborted_) return Status::Aborted("cluster aborted during reservation: " + abort_reason_);
  std::string missing;
  for (int i = 0; i < options_.num_nodes; ++i) {
    if (!nodes_.count(i)) missing += (missing.empty() ? "" : ", ") + std::to_string(i);
  }
  return Status::DeadlineExceeded(
      "reservation timed out after " +
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::steady_clock::now() - created_)
                         .count()) +
      " s: " +
      std::to_string(nodes_.size()) + " of " + std::to_string(options_.num_nodes) +
      " nodes registered; missing executors: " + missing +
      ". Usual causes: fewer executors than num_executors, more than one task slot per "
      "executor (set spark.executor.cores = spark.task.cpus), dynamic allocation "
      "(set spark.dynamicAllocation.enabled=false), or executors that cannot reach the "
      "driver on port " + std::to_string(port_));
}

Status Coordinator::WaitFinished(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [&] { return finished_ || aborted_ || shutdown_; });
  if (aborted_) return Status::Aborted(abort_reason_);
  if (finished_) return Status::OK();
  std::string running;
  for (const auto& [id, n] : nodes_) {
    if (n.phase != NodeState::kExited) running += (running.empty() ? "" : ", ") + Describe(n);
  }
  return Status::DeadlineExceeded("cluster still running after " +
                                  std::to_string(timeout.count() / 1000) + " s: " + running);
}

std::string Coordinator::ClusterJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reserved_ ? cluster_spec_ : "{}";
}

void Coordinator::HandleFeedSync(Conn& c, const std::string& payload) {
  json j = json::parse(payload, nullptr, false);
  if (!j.is_object() || !j.contains("executor_id") || !j["executor_id"].is_number_integer() ||
      !j.contains("qname") || !j["qname"].is_string() || !j.contains("delivered") ||
      !j["delivered"].is_number_unsigned() || !j.contains("closed") || !j["closed"].is_boolean()) {
    return Reject(c, Status::InvalidArgument("FEED_SYNC needs executor_id, qname, delivered, closed"));
  }
  const int id = j["executor_id"].get<int>();
  auto node = nodes_.find(id);
  if (!reserved_ || node == nodes_.end() || node->second.job_name == "ps" ||
      node->second.job_name == "evaluator") {
    return Reject(c, Status::InvalidArgument("FEED_SYNC from executor " + std::to_string(id) +
                                             ", which is not a worker of this cluster"));
  }
  auto& feed = feeds_[j["qname"].get<std::string>()];
  feed[id] = payload;
  // The watermark over every worker; one that has not reported counts as 0, open.
  uint64_t min_delivered = UINT64_MAX;
  bool all_closed = true;
  for (const auto& [eid, n] : nodes_) {
    if (n.job_name == "ps" || n.job_name == "evaluator") continue;
    auto it = feed.find(eid);
    if (it == feed.end()) {
      min_delivered = 0;
      all_closed = false;
      continue;
    }
    json p = json::parse(it->second, nullptr, false);
    min_delivered = std::min<uint64_t>(min_delivered, p.value("delivered", uint64_t{0}));
    all_closed = all_closed && p.value("closed", false);
  }
  if (min_delivered == UINT64_MAX) min_delivered = 0;
  Send(c, MessageType::kFeedState,
       json{{"min_delivered", min_delivered}, {"all_closed", all_closed}}.dump());
}

std::string Coordinator::StatusJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  return StatusJsonLocked();
}

std::string Coordinator::StatusJsonLocked() const {
  static const char* kPhases[] = {"registered", "running", "exited", "lost"};
  json nodes = json::array();
  for (const auto& [id, n] : nodes_) {
    nodes.push_back({{"executor_id", id}, {"host", n.host}, {"port", n.port}, {"pid", n.pid},
                     {"job_name", n.job_name}, {"task_index", n.task_index},
                     {"phase", kPhases[n.phase]}, {"exit_code", n.exit_code},
                     {"signal", n.signal}, {"stopped", n.stopped}, {"traceback", n.traceback},
                     {"tensorboard", n.tensorboard}, {"feed_port", n.feed_port},
                     {"spark_executor", n.spark_executor}, {"container", n.container},
                     {"reason", n.reason}});
  }
  json feeds = json::object();
  for (const auto& [qname, per_node] : feeds_) {
    json q = json::object();
    for (const auto& [id, payload] : per_node) q[std::to_string(id)] = json::parse(payload, nullptr, false);
    feeds[qname] = q;
  }
  return json{{"num_nodes", options_.num_nodes}, {"registered", nodes_.size()},
              {"reserved", reserved_}, {"finished", finished_}, {"aborted", aborted_},
              {"abort_reason", abort_reason_}, {"rejected_connections", rejected_},
              {"cluster_spec", reserved_ ? json::parse(cluster_spec_) : json::object()},
              {"nodes", nodes}, {"feeds", feeds}}
      .dump();
}

int Coordinator::rejected_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return rejected_;
}

}  // namespace sparktf::cluster
