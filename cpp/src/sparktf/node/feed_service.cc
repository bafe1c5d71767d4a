#include "sparktf/node/feed_service.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <nlohmann/json.hpp>

#include "sparktf/feed/stream.h"
#include "sparktf/common/json_internal.h"

namespace sparktf::node {
namespace {

using cluster::Connection;
using cluster::Frame;
using cluster::FrameView;
using cluster::MessageType;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
constexpr milliseconds kPollSlice{20};

bool IsSimpleName(const std::string& s) {
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool RingExists(const std::string& name) {
  int fd = ::shm_open(name.c_str(), O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

int Ms(milliseconds d) { return static_cast<int>(std::clamp<int64_t>(d.count(), 0, INT32_MAX)); }

}  // namespace

Result<std::string> FeedRingName(const std::string& cluster_id, int executor_id,
                                 const std::string& queue) {
  if (!IsSimpleName(cluster_id)) return Status::InvalidArgument("bad cluster id '" + cluster_id + "'");
  if (!IsSimpleName(queue)) {
    return Status::InvalidArgument("queue name '" + queue + "' must be 1-64 of [A-Za-z0-9_]");
  }
  return "/sparktf-" + cluster_id + "-" + std::to_string(executor_id) + "-" + queue;
}

std::string FeedRingFamilyPrefix(const std::string& cluster_id) {
  size_t end = cluster_id.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(cluster_id[end - 1]))) --end;
  if (end > 1 && end < cluster_id.size() && cluster_id[end - 1] == 'g') {
    return "/sparktf-" + cluster_id.substr(0, end);  // "<base>g": any generation
  }
  return "/sparktf-" + cluster_id + "-";
}

std::string FeedSocketName(const std::string& cluster_id, int executor_id) {
  return "sparktf-" + cluster_id + "-" + std::to_string(executor_id);
}

// ---------------------------------------------------------------- server

Result<std::unique_ptr<FeedServer>> FeedServer::Start(const FeedServerOptions& options) {
  if (!IsSimpleName(options.cluster_id)) {
    return Status::InvalidArgument("bad cluster id '" + options.cluster_id + "'");
  }
  std::unique_ptr<FeedServer> s(new FeedServer(options));
  ASSIGN_OR_RETURN(s->tcp_, ListenTcp(options.bind_host, 0));
  s->port_ = LocalPort(s->tcp_.get());
  ASSIGN_OR_RETURN(s->unix_, ListenUnixAbstract(FeedSocketName(options.cluster_id,
                                                               options.executor_id)));
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) return Status::FromErrno("pipe", errno);
  s->wake_read_ = UniqueFd(p[0]);
  s->wake_write_ = UniqueFd(p[1]);
  s->acceptor_ = std::thread([srv = s.get()] { srv->AcceptLoop(); });
  return s;
}

FeedServer::~FeedServer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  cv_.notify_all();
  (void)!::write(wake_write_.get(), "x", 1);
  if (acceptor_.joinable()) acceptor_.join();
  std::vector<Worker> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    workers.swap(workers_);
  }
  for (auto& w : workers) w.thread.join();
}

void FeedServer::ConsumerExited(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    consumer_gone_ = why.empty() ? "the TF process exited" : why;
  }
  cv_.notify_all();
}

Status FeedServer::ConsumerGoneLocked() const {
  if (stopping_) return Status::Aborted("node " + std::to_string(o_.executor_id) + " is stopping");
  if (!consumer_gone_.empty()) {
    return Status::Aborted("the TF process of node " + std::to_string(o_.executor_id) +
                           " is gone: " + consumer_gone_);
  }
  return Status::OK();
}

void FeedServer::AcceptLoop() {
  while (true) {
    pollfd fds[3] = {{tcp_.get(), POLLIN, 0}, {unix_.get(), POLLIN, 0}, {wake_read_.get(), POLLIN, 0}};
    if (::poll(fds, 3, -1) < 0 && errno != EINTR) return;
    if (fds[2].revents) return;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      UniqueFd fd(::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC));
      if (!fd.valid()) continue;
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      for (auto it = workers_.begin(); it != workers_.end();) {
        if (it->done->load()) {
          it->thread.join();
          it = workers_.erase(it);
        } else {
          ++it;
        }
      }
      open_fds_.push_back(fd.get());
      auto done = std::make_shared<std::atomic<bool>>(false);
      workers_.push_back({std::thread([this, done, f = std::move(fd), local = i == 1]() mutable {
                            Serve(std::move(f), local);
                            done->store(true);
                          }),
                          done});
    }
  }
}

namespace {

// After an ERROR frame: half-closes and reads what the task still sends (its FEED_DATA in
// flight) until it closes or for at most 2 s, so that the close is not a reset, which
// would discard the ERROR frame from the task's receive buffer before it read it.
void LingerForReason(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  char scratch[64 * 1024];
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) < 0 && errno != EINTR) return;
    if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    const ssize_t n = ::recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return;
  }
}

}  // namespace

void FeedServer::Serve(UniqueFd fd, bool local) {
  const int raw = fd.get();
  HostPort peer{local ? "local task" : "remote task", 0};
  auto conn = Connection::Accept(std::move(fd), peer, o_.token, cluster::kDefaultHelloTimeout);
  if (conn.ok()) {
    Status st = Session(*conn, local);
    if (!st.ok()) {
      (void)conn->Send(MessageType::kError, cluster::ErrorPayload(st));
      LingerForReason(raw);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), raw), open_fds_.end());
}

Status FeedServer::WaitForRing(const std::string& ring) {
  const auto deadline = Clock::now() + o_.timeout;
  std::unique_lock<std::mutex> lock(mu_);
  while (!RingExists(ring)) {
    RETURN_NOT_OK(ConsumerGoneLocked());
    if (Clock::now() >= deadline) {
      return Status::DeadlineExceeded(
          "node " + std::to_string(o_.executor_id) + " did not open feed " + ring + " within " +
          std::to_string(o_.timeout.count() / 1000) + " s");
    }
    cv_.wait_for(lock, kPollSlice);
  }
  return ConsumerGoneLocked();
}

Status FeedServer::Session(Connection& conn, bool local) {
  ASSIGN_OR_RETURN(Frame open, conn.Receive(o_.timeout));
  json j = json::parse(open.payload, nullptr, false);
  if (open.type != MessageType::kFeedOpen || !j.is_object() || !j.contains("qname") ||
      !j["qname"].is_string()) {
    return Status::InvalidArgument("expected FEED_OPEN {\"qname\", ...}");
  }
  const int64_t partition = JsonGetOr(j, "partition", int64_t{0});
  const uint64_t feed_id = JsonGetOr(j, "feed", uint64_t{0});
  const bool inference = JsonGetOr(j, "inference", false);
  ASSIGN_OR_RETURN(std::string ring, FeedRingName(o_.cluster_id, o_.executor_id,
                                                  j["qname"].get<std::string>()));
  RETURN_NOT_OK(WaitForRing(ring));
  if (JsonGetOr(j, "close", false)) {
    ASSIGN_OR_RETURN(auto r, feed::Ring::Attach(ring));
    r->CloseInput();
    return conn.Send(MessageType::kFeedDone, "{}");
  }
  bool holds_inference = false;
  if (inference) {
    const auto deadline = Clock::now() + o_.timeout;
    std::unique_lock<std::mutex> lock(mu_);
    while (inference_busy_) {
      RETURN_NOT_OK(ConsumerGoneLocked());
      if (Clock::now() >= deadline) {
        return Status::DeadlineExceeded("another inference partition kept node " +
                                        std::to_string(o_.executor_id) + " busy for " +
                                        std::to_string(o_.timeout.count() / 1000) + " s");
      }
      cv_.wait_for(lock, kPollSlice);
    }
    inference_busy_ = holds_inference = true;
  }
  struct Release {
    FeedServer* s;
    bool held;
    ~Release() {
      if (!held) return;
      std::lock_guard<std::mutex> lock(s->mu_);
      s->inference_busy_ = false;
      s->cv_.notify_all();
    }
  } release{this, holds_inference};
  RETURN_NOT_OK(conn.Send(MessageType::kFeedReady, json{{"ring", ring}, {"local", local}}.dump()));

  if (local) {  // the task pushes itself; wait for its end (or its death)
    while (true) {
      auto f = conn.Receive(milliseconds{1000});
      if (f.ok() && f->type == MessageType::kFeedEnd) return conn.Send(MessageType::kFeedDone, "{}");
      if (f.ok()) return Status::InvalidArgument("unexpected " + std::string(MessageTypeName(f->type)));
      if (f.status().code() != StatusCode::kDeadlineExceeded) return Status::OK();  // task gone
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return Status::OK();
    }
  }

  std::string result_ring;
  if (inference) {
    uint64_t n;
    {
      std::lock_guard<std::mutex> lock(mu_);
      n = ++sessions_;
    }
    ASSIGN_OR_RETURN(result_ring, FeedRingName(o_.cluster_id, o_.executor_id,
                                               "r" + std::to_string(::getpid()) + "_" + std::to_string(n)));
  }
  ASSIGN_OR_RETURN(auto feed, feed::PartitionFeed::Open(ring, feed_id, partition, result_ring,
                                                                 o_.timeout));
  auto forward = [&]() -> Status {
    for (const std::string& r : feed->TakeResults()) RETURN_NOT_OK(conn.Send(MessageType::kFeedResult, r));
    return Status::OK();
  };
  while (true) {
    ASSIGN_OR_RETURN(cluster::FrameHeader h, conn.ReceiveHeader(o_.timeout));
    if (h.type == MessageType::kFeedData) {
      // The batch is received from the socket straight into the ring.
      const milliseconds stall = std::min(o_.timeout, kMidFrameTimeout);
      RETURN_NOT_OK(feed->PushFilled(
          h.payload_size, [&](std::span<char> into) { return conn.ReadPayload(into, stall); },
          o_.timeout));
      RETURN_NOT_OK(forward());
      continue;
    }
    std::string payload(h.payload_size, '\0');
    RETURN_NOT_OK(conn.ReadPayload({payload.data(), payload.size()}, o_.timeout));
    if (h.type == MessageType::kFeedEnd) {
      RETURN_NOT_OK(feed->Finish(o_.timeout));
      RETURN_NOT_OK(forward());
      return conn.Send(MessageType::kFeedDone,
                       json{{"rows", feed->rows_pushed()}, {"results", feed->result_rows()}}.dump());
    }
    return Status::InvalidArgument("unexpected " + std::string(MessageTypeName(h.type)));
  }
}

// ---------------------------------------------------------------- client

Result<std::unique_ptr<FeedSession>> FeedSession::Open(const FeedTarget& target,
                                                       const std::string& token,
                                                       const std::string& queue, uint64_t feed,
                                                       int64_t partition, bool inference,
                                                       milliseconds timeout) {
  Result<UniqueFd> unix_fd = Status::NotFound("not looked up");
  if (target.prefer_local) {
    unix_fd = ConnectUnixAbstract(FeedSocketName(target.cluster_id, target.executor_id));
  }
  Result<Connection> conn = Status::Internal("unset");
  if (unix_fd.ok()) {
    conn = Connection::Handshake(std::move(*unix_fd), {"node agent (local)", 0}, token, timeout);
  } else {
    conn = Connection::Open(target.address, token, std::min(timeout, cluster::kDefaultConnectTimeout));
  }
  if (!conn.ok()) {
    return conn.status().WithContext("feed node " + std::to_string(target.executor_id));
  }
  std::unique_ptr<FeedSession> s(new FeedSession(std::move(*conn), timeout));
  json open = {{"qname", queue}, {"feed", feed}, {"partition", partition}, {"inference", inference}};
  ASSIGN_OR_RETURN(Frame ready, s->conn_.Call(MessageType::kFeedOpen, open.dump(),
                                              MessageType::kFeedReady, timeout));
  json r = json::parse(ready.payload, nullptr, false);
  if (!r.is_object() || !r.contains("ring") || !r["ring"].is_string()) {
    return Status::Internal("malformed FEED_READY");
  }
  if (JsonGetOr(r, "local", false)) {
    std::string result_ring;
    if (inference) {
      ASSIGN_OR_RETURN(result_ring, FeedRingName(target.cluster_id, target.executor_id,
                                                 "t" + std::to_string(::getpid()) + "_" +
                                                     std::to_string(partition)));
    }
    ASSIGN_OR_RETURN(s->local_feed_, feed::PartitionFeed::Open(r["ring"].get<std::string>(), feed,
                                                               partition, result_ring, timeout));
  }
  return s;
}

Status FeedSession::TakeIncoming(bool* done) {
  Status read = conn_.ReadAvailable();
  Frame f;
  while (true) {
    ASSIGN_OR_RETURN(bool have, conn_.NextBuffered(&f));  // an ERROR frame becomes its status
    if (!have) break;
    if (f.type == MessageType::kFeedResult) {
      results_.push_back(std::move(f.payload));
    } else if (f.type == MessageType::kFeedDone) {
      if (done) *done = true;
    } else {
      return Status::Internal("unexpected " + std::string(MessageTypeName(f.type)) + " from the agent");
    }
  }
  return read;
}

Status FeedSession::SendFrame(MessageType type, feed::MessageParts payload) {
  // The header and the parts go out as they are (sendmsg), not assembled into one buffer.
  size_t size = 0;
  for (std::string_view part : payload) size += part.size();
  char header[cluster::kFrameHeaderSize];
  cluster::EncodeFrameHeader(type, static_cast<uint32_t>(size), header);
  std::vector<iovec> iov{{header, sizeof(header)}};
  for (std::string_view part : payload) {
    if (!part.empty()) iov.push_back({const_cast<char*>(part.data()), part.size()});
  }
  size_t next = 0;  // iov[next] is the first part not wholly sent
  auto deadline = Clock::now() + timeout_;
  while (next < iov.size()) {
    pollfd p{conn_.fd(), POLLIN | POLLOUT, 0};
    const int left = Ms(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()));
    if (::poll(&p, 1, std::min(left, 1000)) < 0 && errno != EINTR) return Status::FromErrno("poll", errno);
    if (p.revents & (POLLIN | POLLHUP | POLLERR)) RETURN_NOT_OK(TakeIncoming(nullptr));
    if (p.revents & POLLOUT) {
      msghdr msg{};
      msg.msg_iov = iov.data() + next;
      msg.msg_iovlen = std::min<size_t>(iov.size() - next, IOV_MAX);
      ssize_t n = ::sendmsg(conn_.fd(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n > 0) {
        for (auto sent = static_cast<size_t>(n); sent > 0;) {
          const size_t take = std::min(sent, iov[next].iov_len);
          iov[next].iov_base = static_cast<char*>(iov[next].iov_base) + take;
          iov[next].iov_len -= take;
          sent -= take;
          if (iov[next].iov_len == 0) ++next;
        }
        deadline = Clock::now() + timeout_;
      } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        const int err = errno;
        RETURN_NOT_OK(TakeIncoming(nullptr));  // the agent's reason, if it sent one
        return Status::FromErrno("send to " + conn_.peer().ToString(), err);
      }
    }
    if (Clock::now() >= deadline) {
      return Status::DeadlineExceeded("node agent " + conn_.peer().ToString() + " took no data for " +
                                      std::to_string(timeout_.count() / 1000) + " s");
    }
  }
  return Status::OK();
}

Status FeedSession::Push(feed::MessageParts batch) {
  if (batch.empty()) return Status::InvalidArgument("empty feed batch");
  ASSIGN_OR_RETURN(uint64_t rows, feed::BatchRows(batch[0]));  // the header comes first
  if (local_feed_) {
    RETURN_NOT_OK(local_feed_->Push(batch, timeout_));
  } else {
    RETURN_NOT_OK(ended_);
    ended_ = SendFrame(MessageType::kFeedData, batch);
    RETURN_NOT_OK(ended_);
  }
  rows_pushed_ += rows;
  return Status::OK();
}

Status FeedSession::Finish() {
  if (local_feed_) {
    RETURN_NOT_OK(local_feed_->Finish(timeout_));
    for (auto& r : local_feed_->TakeResults()) results_.push_back(std::move(r));
    return conn_.Call(MessageType::kFeedEnd, "{}", MessageType::kFeedDone, timeout_).status();
  }
  RETURN_NOT_OK(ended_);  // the agent ended the session (e.g. Cancelled): nothing to end
  RETURN_NOT_OK(SendFrame(MessageType::kFeedEnd, "{}"));
  bool done = false;
  auto deadline = Clock::now() + timeout_;
  while (!done) {
    pollfd p{conn_.fd(), POLLIN, 0};
    ::poll(&p, 1, 1000);
    const size_t before = results_.size();
    RETURN_NOT_OK(TakeIncoming(&done));
    if (results_.size() != before) deadline = Clock::now() + timeout_;
    if (!done && Clock::now() >= deadline) {
      return Status::DeadlineExceeded("node agent " + conn_.peer().ToString() +
                                      " did not finish the partition within " +
                                      std::to_string(timeout_.count() / 1000) + " s");
    }
  }
  return Status::OK();
}

std::vector<std::string> FeedSession::TakeResults() {
  if (local_feed_) {
    for (auto& r : local_feed_->TakeResults()) results_.push_back(std::move(r));
  }
  std::vector<std::string> out;
  out.swap(results_);
  return out;
}

Status CloseFeed(const FeedTarget& target, const std::string& token, const std::string& queue,
                 milliseconds timeout) {
  ASSIGN_OR_RETURN(Connection conn, Connection::Open(target.address, token, timeout));
  json open = {{"qname", queue}, {"close", true}};
  return conn.Call(MessageType::kFeedOpen, open.dump(), MessageType::kFeedDone, timeout)
      .status()
      .WithContext("close feed '" + queue + "' of node " + std::to_string(target.executor_id));
}

feed::LockstepSync MakeLockstepSync(const HostPort& coordinator, const std::string& token,
                                    int executor_id, const std::string& queue, milliseconds timeout,
                                    int generation) {
  auto conn = std::make_shared<std::unique_ptr<Connection>>();
  return [=](const feed::FeedProgress& p) -> Result<feed::Watermark> {
    if (!*conn) {
      ASSIGN_OR_RETURN(Connection c, Connection::Open(coordinator, token, timeout));
      *conn = std::make_unique<Connection>(std::move(c));
    }
    json sync = {{"executor_id", executor_id}, {"qname", queue},      {"delivered", p.delivered},
                 {"closed", p.closed},         {"consumed", p.consumed}, {"dropped", p.dropped},
                 {"finished", p.finished}, {"generation", generation},
                 {"batches", p.batches},   {"wait_us", p.wait_us}, {"ring_fill", p.ring_fill}};
    auto reply = (*conn)->Call(MessageType::kFeedSync, sync.dump(), MessageType::kFeedState, timeout);
    if (!reply.ok()) {
      conn->reset();
      return reply.status().WithContext("lockstep sync with the coordinator");
    }
    json j = json::parse(reply->payload, nullptr, false);
    if (!j.is_object()) return Status::Internal("malformed FEED_STATE");
    return feed::Watermark{JsonGetOr(j, "min_delivered", uint64_t{0}),
                           JsonGetOr(j, "all_closed", false)};
  };
}

}  // namespace sparktf::node
