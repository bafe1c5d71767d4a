#include "sparktf/cluster/protocol.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "sparktf/common/json_internal.h"

namespace sparktf::cluster {

using nlohmann::json;

std::string_view MessageTypeName(MessageType type) {
  switch (type) {
    case MessageType::kHello: return "HELLO";
    case MessageType::kWelcome: return "WELCOME";
    case MessageType::kError: return "ERROR";
    case MessageType::kRegister: return "REGISTER";
    case MessageType::kRegistered: return "REGISTERED";
    case MessageType::kAwaitCluster: return "AWAIT_CLUSTER";
    case MessageType::kClusterSpec: return "CLUSTER_SPEC";
    case MessageType::kHeartbeat: return "HEARTBEAT";
    case MessageType::kNodeOutput: return "NODE_OUTPUT";
    case MessageType::kNodeMetrics: return "NODE_METRICS";
    case MessageType::kReportExit: return "REPORT_EXIT";
    case MessageType::kReportAck: return "REPORT_ACK";
    case MessageType::kBarrier: return "BARRIER";
    case MessageType::kBarrierDone: return "BARRIER_DONE";
    case MessageType::kAbort: return "ABORT";
    case MessageType::kStop: return "STOP";
    case MessageType::kGetStatus: return "GET_STATUS";
    case MessageType::kStatus: return "STATUS";
    case MessageType::kFeedSync: return "FEED_SYNC";
    case MessageType::kFeedState: return "FEED_STATE";
    case MessageType::kFeedAssign: return "FEED_ASSIGN";
    case MessageType::kFeedTarget: return "FEED_TARGET";
    case MessageType::kFeedOpen: return "FEED_OPEN";
    case MessageType::kFeedReady: return "FEED_READY";
    case MessageType::kFeedData: return "FEED_DATA";
    case MessageType::kFeedEnd: return "FEED_END";
    case MessageType::kFeedDone: return "FEED_DONE";
    case MessageType::kFeedResult: return "FEED_RESULT";
  }
  return "UNKNOWN";
}

void EncodeFrameHeader(MessageType type, uint32_t payload_size, char out[kFrameHeaderSize]) {
  const uint32_t magic = kFrameMagic;
  const uint16_t version = kProtocolVersion;
  const auto t = static_cast<uint16_t>(type);
  std::memcpy(out, &magic, 4);
  std::memcpy(out + 4, &version, 2);
  std::memcpy(out + 6, &t, 2);
  std::memcpy(out + 8, &payload_size, 4);
}

void AppendFrame(MessageType type, std::span<const std::string_view> payload_parts,
                 std::string* out) {
  size_t size = 0;
  for (std::string_view part : payload_parts) size += part.size();
  char header[kFrameHeaderSize];
  EncodeFrameHeader(type, static_cast<uint32_t>(size), header);
  out->reserve(out->size() + kFrameHeaderSize + size);
  out->append(header, kFrameHeaderSize);
  for (std::string_view part : payload_parts) out->append(part);
}

void FrameDecoder::Feed(std::string_view bytes) {
  if (bytes.empty()) return;
  std::span<char> room = Reserve(bytes.size());
  std::memcpy(room.data(), bytes.data(), bytes.size());
  Commit(bytes.size());
}

std::span<char> FrameDecoder::Reserve(size_t min) {
  size_t want = min;
  uint32_t magic = 0;
  if (buffered() >= kFrameHeaderSize) std::memcpy(&magic, buf_.get() + begin_, 4);
  if (magic == kFrameMagic) {  // the rest of this frame, within the limit
    uint32_t len;
    std::memcpy(&len, buf_.get() + begin_ + 8, 4);
    const size_t frame = kFrameHeaderSize + std::min<size_t>(len, max_frame_size_);
    if (frame > buffered()) want = std::max(want, frame - buffered());
  }
  if (capacity_ - end_ < want) {
    const size_t kept = buffered();
    if (capacity_ - kept >= want && begin_ > 0) {
      std::memmove(buf_.get(), buf_.get() + begin_, kept);
    } else {
      const size_t capacity = std::max(kept + want, 2 * capacity_);
      auto bigger = std::make_unique_for_overwrite<char[]>(capacity);
      if (kept > 0) std::memcpy(bigger.get(), buf_.get() + begin_, kept);
      buf_ = std::move(bigger);
      capacity_ = capacity;
    }
    begin_ = 0;
    end_ = kept;
  }
  return {buf_.get() + end_, capacity_ - end_};
}

Status FrameDecoder::Next(Frame* frame, bool* have) {
  FrameView view;
  RETURN_NOT_OK(NextView(&view, have));
  if (*have) {
    frame->type = view.type;
    frame->payload.assign(view.payload);
  }
  return Status::OK();
}

Status FrameDecoder::PeekHeader(uint16_t* type, uint32_t* len, bool* have) {
  *have = false;
  if (!error_.ok()) return error_;
  if (buffered() < kFrameHeaderSize) return Status::OK();
  const char* h = buf_.get() + begin_;
  uint32_t magic;
  uint16_t version;
  std::memcpy(&magic, h, 4);
  std::memcpy(&version, h + 4, 2);
  std::memcpy(type, h + 6, 2);
  std::memcpy(len, h + 8, 4);
  if (magic != kFrameMagic) {
    error_ = Status::InvalidArgument("bad frame magic (not a sparktf peer?)");
  } else if (version != kProtocolVersion) {
    error_ = Status::InvalidArgument("unsupported protocol version " + std::to_string(version) +
                                     " (this side speaks " +
                                     std::to_string(kProtocolVersion) + ")");
  } else if (*len > max_frame_size_) {
    error_ = Status::ResourceExhausted("frame of " + std::to_string(*len) +
                                       " bytes exceeds the limit of " +
                                       std::to_string(max_frame_size_));
  }
  *have = error_.ok();
  return error_;
}

Status FrameDecoder::NextView(FrameView* frame, bool* have) {
  uint16_t type;
  uint32_t len;
  RETURN_NOT_OK(PeekHeader(&type, &len, have));
  if (!*have) return Status::OK();
  *have = false;
  if (buffered() < kFrameHeaderSize + len) return Status::OK();
  frame->type = static_cast<MessageType>(type);
  frame->payload = std::string_view(buf_.get() + begin_ + kFrameHeaderSize, len);
  // The bytes stay where they are until the next Reserve (or Feed) writes over them.
  begin_ += kFrameHeaderSize + len;
  if (begin_ == end_) begin_ = end_ = 0;
  *have = true;
  return Status::OK();
}

Status FrameDecoder::NextHeader(FrameHeader* header, bool* have) {
  uint16_t type;
  uint32_t len;
  RETURN_NOT_OK(PeekHeader(&type, &len, have));
  if (!*have) return Status::OK();
  header->type = static_cast<MessageType>(type);
  header->payload_size = len;
  begin_ += kFrameHeaderSize;
  if (begin_ == end_) begin_ = end_ = 0;
  return Status::OK();
}

size_t FrameDecoder::TakeBuffered(std::span<char> into) {
  const size_t n = std::min(into.size(), buffered());
  if (n > 0) std::memcpy(into.data(), buf_.get() + begin_, n);
  begin_ += n;
  if (begin_ == end_) begin_ = end_ = 0;
  return n;
}

bool TokensEqual(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

std::string ErrorPayload(const Status& st) {
  return json{{"code", static_cast<int>(st.code())}, {"message", st.message()}}.dump();
}

Status ErrorFromPayload(std::string_view payload, const std::string& peer) {
  json j = json::parse(payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Internal(peer + " sent an unreadable error");
  }
  int code = JsonGetOr(j, "code", static_cast<int>(StatusCode::kInternal));
  if (code <= 0 || code > static_cast<int>(StatusCode::kLastCode)) {
    code = static_cast<int>(StatusCode::kInternal);
  }
  return Status(static_cast<StatusCode>(code), peer + ": " + JsonGetOr(j, "message", ""));
}

Result<Connection> Connection::Open(const HostPort& addr, const std::string& token,
                                    std::chrono::milliseconds timeout,
                                    const std::string& local_ip) {
  ASSIGN_OR_RETURN(UniqueFd fd, ConnectTcp(addr, timeout, local_ip));
  return Handshake(std::move(fd), addr, token, timeout);
}

Result<Connection> Connection::Handshake(UniqueFd fd, HostPort peer, const std::string& token,
                                         std::chrono::milliseconds timeout) {
  Connection conn(std::move(fd), std::move(peer));
  ASSIGN_OR_RETURN(Frame reply, conn.Call(MessageType::kHello, token, MessageType::kWelcome,
                                          timeout));
  (void)reply;
  return conn;
}

Result<Connection> Connection::Accept(UniqueFd fd, HostPort peer, const std::string& token,
                                      std::chrono::milliseconds timeout) {
  Connection conn(std::move(fd), std::move(peer));
  auto hello = conn.Receive(timeout);
  if (!hello.ok()) return hello.status();
  if (hello->type != MessageType::kHello || !TokensEqual(hello->payload, token)) {
    Status st = Status::Unauthenticated("bad or missing token from " + conn.peer_.ToString());
    (void)conn.Send(MessageType::kError, ErrorPayload(st));
    return st;
  }
  RETURN_NOT_OK(conn.Send(MessageType::kWelcome, "{}"));
  return conn;
}

Status Connection::Send(MessageType type, std::string_view payload) {
  std::string frame;
  AppendFrame(type, payload, &frame);
  return WriteAll(fd_.get(), frame).WithContext("send to " + peer_.ToString());
}

Status Connection::ReadAvailable() {
  bool read_some = false;
  while (true) {
    // Straight into the decoder's buffer: a large frame in one read where the socket has it.
    std::span<char> room = decoder_.Reserve(65536);
    ssize_t n = ::recv(fd_.get(), room.data(), room.size(), MSG_DONTWAIT);
    if (n > 0) {
      decoder_.Commit(static_cast<size_t>(n));
      read_some = true;
      if (static_cast<size_t>(n) < room.size()) return Status::OK();
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Status::OK();
    // The peer closed (or reset) after what this call read: that is decoded first, and
    // the next call, which reads the close again, reports it.
    if (read_some) return Status::OK();
    if (n == 0) return Status::Unavailable(peer_.ToString() + " closed the connection");
    return Status::FromErrno("receive from " + peer_.ToString(), errno);
  }
}

Result<bool> Connection::NextBufferedView(FrameView* frame) {
  bool have = false;
  RETURN_NOT_OK(decoder_.NextView(frame, &have).WithContext(peer_.ToString()));
  if (have && frame->type == MessageType::kError) {
    return ErrorFromPayload(frame->payload, peer_.ToString());
  }
  return have;
}

Result<bool> Connection::NextBuffered(Frame* frame) {
  FrameView view;
  ASSIGN_OR_RETURN(bool have, NextBufferedView(&view));
  if (have) {
    frame->type = view.type;
    frame->payload.assign(view.payload);
  }
  return have;
}

Result<Frame> Connection::Receive(std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(FrameView view, ReceiveView(timeout));
  return Frame{view.type, std::string(view.payload)};
}

Result<FrameView> Connection::ReceiveView(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  FrameView frame;
  while (true) {
    ASSIGN_OR_RETURN(bool have, NextBufferedView(&frame));
    if (have) return frame;
    RETURN_NOT_OK(WaitReadable(deadline, timeout, "reply"));
    RETURN_NOT_OK(ReadAvailable());
  }
}

Status Connection::WaitReadable(std::chrono::steady_clock::time_point deadline,
                                std::chrono::milliseconds timeout, const char* what) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return Status::DeadlineExceeded(std::string("no ") + what + " from " + peer_.ToString() +
                                      " within " + std::to_string(timeout.count()) + " ms");
    }
    pollfd p{fd_.get(), POLLIN, 0};
    int rc = ::poll(&p, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno != EINTR) return Status::FromErrno("poll", errno);
    if (rc > 0) return Status::OK();
  }
}

Result<FrameHeader> Connection::ReceiveHeader(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  FrameHeader header;
  while (true) {
    bool have = false;
    RETURN_NOT_OK(decoder_.NextHeader(&header, &have).WithContext(peer_.ToString()));
    if (have) break;
    RETURN_NOT_OK(WaitReadable(deadline, timeout, "frame"));
    // A few bytes past the header at most, so that a bulk payload is read where the
    // caller wants it rather than into the decoder's buffer.
    std::span<char> room = decoder_.Reserve(kFrameHeaderSize);
    const size_t want = std::min<size_t>(room.size(), 4096);
    ssize_t n = ::recv(fd_.get(), room.data(), want, MSG_DONTWAIT);
    if (n > 0) {
      decoder_.Commit(static_cast<size_t>(n));
    } else if (n == 0) {
      return Status::Unavailable(peer_.ToString() + " closed the connection");
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::FromErrno("receive from " + peer_.ToString(), errno);
    }
  }
  if (header.type == MessageType::kError) {
    std::string payload(header.payload_size, '\0');
    RETURN_NOT_OK(ReadPayload({payload.data(), payload.size()}, timeout));
    return ErrorFromPayload(payload, peer_.ToString());
  }
  return header;
}

Status Connection::ReadPayload(std::span<char> into, std::chrono::milliseconds timeout) {
  size_t got = decoder_.TakeBuffered(into);
  while (got < into.size()) {
    RETURN_NOT_OK(WaitReadable(std::chrono::steady_clock::now() + timeout, timeout,
                               "payload bytes"));
    ssize_t n = ::recv(fd_.get(), into.data() + got, into.size() - got, MSG_DONTWAIT);
    if (n > 0) {
      got += static_cast<size_t>(n);
    } else if (n == 0) {
      return Status::Unavailable(peer_.ToString() + " closed the connection within a frame (" +
                                 std::to_string(got) + " of " + std::to_string(into.size()) +
                                 " payload bytes)");
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::FromErrno("receive from " + peer_.ToString(), errno);
    }
  }
  return Status::OK();
}

Result<Frame> Connection::Call(MessageType type, std::string_view payload, MessageType expect,
                               std::chrono::milliseconds timeout) {
  RETURN_NOT_OK(Send(type, payload));
  ASSIGN_OR_RETURN(Frame reply, Receive(timeout));
  if (reply.type != expect) {
    return Status::Internal(peer_.ToString() + " answered " +
                            std::string(MessageTypeName(type)) + " with " +
                            std::string(MessageTypeName(reply.type)) + ", expected " +
                            std::string(MessageTypeName(expect)));
  }
  return reply;
}

}  // namespace sparktf::cluster
