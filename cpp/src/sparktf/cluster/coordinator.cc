#include "sparktf/cluster/coordinator.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <iostream>

namespace sparktf::cluster {

using Clock = std::chrono::steady_clock;

struct Coordinator::Conn {
  int id = 0;
  UniqueFd fd;
  FrameDecoder decoder;
  std::string out;
  bool authenticated = false;
  bool closing = false;  // close once `out` is flushed
  Clock::time_point opened;
  explicit Conn(size_t max_frame) : decoder(max_frame) {}
};

namespace {

ClusterOptions StateOptions(const CoordinatorOptions& o) {
  ClusterOptions c;
  c.num_nodes = o.num_nodes;
  c.roles = {o.num_ps, o.master_node, o.eval_node};
  c.heartbeat_timeout = o.heartbeat_timeout;
  c.straggler_fraction = o.straggler_fraction;
  c.straggler_after = o.straggler_after;
  return c;
}

}  // namespace

Coordinator::Coordinator(const CoordinatorOptions& options)
    : options_(options),
      state_(StateOptions(options), Clock::now()),
      node_logs_(options.node_logs) {}

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
  // Every agent of a large cluster connects at once: a full accept queue drops SYNs, and
  // each drop costs the agent a 1 s retransmit (the kernel caps this at somaxconn).
  constexpr int kListenBacklog = 4096;
  ASSIGN_OR_RETURN(c->listen_fd_, ListenTcp(options.bind_host, options.port, kListenBacklog));
  RETURN_NOT_OK(SetNonBlocking(c->listen_fd_.get(), true));
  c->port_ = LocalPort(c->listen_fd_.get());
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) return Status::FromErrno("pipe", errno);
  c->wake_read_.Reset(pipe_fds[0]);
  c->wake_write_.Reset(pipe_fds[1]);
  if (options.status_server) {
    Coordinator* raw = c.get();
    ASSIGN_OR_RETURN(c->status_server_,
                     StatusServer::Start(*options.status_server,
                                         {[raw] { return raw->StatusJson(); },
                                          [raw] { return raw->HistoryJson(); }}));
  }
  c->thread_ = std::thread([raw = c.get()] { raw->Loop(); });
  return c;
}

Coordinator::~Coordinator() { Shutdown(); }

void Coordinator::Shutdown() {
  if (status_server_) status_server_->Shutdown();
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

void Coordinator::Apply(Effects& fx) {
  for (const auto& m : fx.messages) {
    auto it = conns_.find(m.conn);
    if (it != conns_.end() && it->second->fd.valid()) {
      AppendFrame(m.type, m.payload, &it->second->out);
      pending_.insert(m.conn);
    }
  }
  for (int id : fx.close) {
    auto it = conns_.find(id);
    if (it != conns_.end()) {
      it->second->closing = true;
      pending_.insert(id);
    }
  }
  for (const auto& line : fx.output) node_logs_.Write(line);
  for (const auto& warning : fx.warnings) std::cerr << "sparktf: " << warning << std::endl;
  fx = Effects{};
  cv_.notify_all();
}

void Coordinator::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  std::vector<pollfd> fds;
  std::vector<int> ids;
  auto next_tick = Clock::now();
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
    // Deadlines (HELLO, heartbeats) are whole seconds: checked every 100 ms, not on every
    // wake-up, which with many nodes comes thousands of times a second.
    const auto now = Clock::now();
    if (now >= next_tick) {
      next_tick = now + std::chrono::milliseconds(100);
      CheckHelloTimeouts();
      Effects fx;
      state_.OnTick(now, &fx);
      Apply(fx);
    }
    // Flush what was queued for connections that were not polled for output; close
    // those whose last words are out.
    bool closed_any = false;
    for (auto it = pending_.begin(); it != pending_.end();) {
      auto conn = conns_.find(*it);
      if (conn == conns_.end()) {
        it = pending_.erase(it);
        continue;
      }
      Conn& c = *conn->second;
      if (!c.out.empty()) Flush(c);
      if (c.closing && c.out.empty()) CloseConn(c);
      closed_any = closed_any || !c.fd.valid();
      // Flush and CloseConn may have queued output elsewhere; those ids are in pending_.
      it = c.out.empty() || !c.fd.valid() ? pending_.erase(it) : std::next(it);
    }
    if (closed_any || !pending_.empty()) {
      std::erase_if(conns_, [](const auto& kv) { return !kv.second->fd.valid(); });
    }
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
      AppendFrame(MessageType::kWelcome, "{}", &c.out);
      pending_.insert(c.id);
      continue;
    }
    Effects fx;
    state_.OnFrame(c.id, f, Clock::now(), &fx);
    Apply(fx);
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

void Coordinator::Reject(Conn& c, const Status& why) {
  state_.CountRejection();
  AppendFrame(MessageType::kError, ErrorPayload(why), &c.out);
  c.closing = true;
  pending_.insert(c.id);
}

void Coordinator::CloseConn(Conn& c) {
  if (!c.fd.valid()) return;
  c.fd.Reset();
  c.out.clear();
  Effects fx;
  state_.OnClosed(c.id, &fx);
  Apply(fx);
  Wake();  // what the close caused (ABORT to the others) goes out at once
}

void Coordinator::CheckHelloTimeouts() {
  const auto now = Clock::now();
  for (auto& [id, c] : conns_) {
    if (!c->authenticated && !c->closing && now - c->opened > options_.hello_timeout) {
      Reject(*c, Status::DeadlineExceeded("no HELLO within " +
                                          std::to_string(options_.hello_timeout.count()) + " ms"));
    }
  }
}

void Coordinator::Abort(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  Effects fx;
  state_.Abort(reason, &fx);
  Apply(fx);
  Wake();
}

void Coordinator::SetEvaluatorGrace(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(mu_);
  state_.SetEvaluatorGrace(grace);
  Wake();
}

int Coordinator::Restart() {
  std::lock_guard<std::mutex> lock(mu_);
  Effects fx;
  state_.Restart(Clock::now(), &fx);
  Apply(fx);
  Wake();
  return state_.generation();
}

Status Coordinator::WaitReserved(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout,
               [&] { return state_.reserved() || state_.aborted() || shutdown_; });
  if (state_.reserved()) return Status::OK();
  if (state_.aborted()) {
    return Status::Aborted("cluster aborted during reservation: " + state_.abort_reason());
  }
  return Status::DeadlineExceeded(state_.ReservationTimeoutMessage(Clock::now(), port_));
}

Status Coordinator::WaitFinished(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout,
               [&] { return state_.finished() || state_.aborted() || shutdown_; });
  if (state_.aborted()) return Status::Aborted(state_.abort_reason());
  if (state_.finished()) return Status::OK();
  return Status::DeadlineExceeded("cluster still running after " +
                                  std::to_string(timeout.count() / 1000) + " s: " +
                                  state_.RunningNodes());
}

std::string Coordinator::ClusterJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.ClusterJson();
}

std::string Coordinator::StatusJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.StatusJson();
}

std::string Coordinator::HistoryJson() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.HistoryJson();
}

std::string Coordinator::NodeLogPath(const std::string& node) const {
  std::lock_guard<std::mutex> lock(mu_);
  return node_logs_.PathOf(node, state_.generation());
}

int Coordinator::rejected_connections() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_.rejected_connections();
}

}  // namespace sparktf::cluster
