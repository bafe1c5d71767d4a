// The coordinator protocol (docs/protocol.md): length-prefixed frames over TCP.
//
// Frame: magic u32 "STF1" | version u16 | type u16 | payload length u32 (all
// little-endian) | payload. The first frame on every connection is HELLO whose
// payload is the cluster's token, compared in constant time before anything
// else is parsed; every later payload is a JSON object.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "sparktf/common/net.h"
#include "sparktf/common/result.h"

namespace sparktf::cluster {

constexpr uint32_t kFrameMagic = 0x31465453;  // bytes "STF1"
constexpr uint16_t kProtocolVersion = 1;
constexpr size_t kFrameHeaderSize = 12;
constexpr size_t kDefaultMaxFrameSize = 16 << 20;
constexpr size_t kMaxTokenSize = 256;

constexpr std::chrono::milliseconds kDefaultConnectTimeout{30000};
constexpr std::chrono::milliseconds kDefaultHelloTimeout{5000};
constexpr std::chrono::milliseconds kDefaultHeartbeatInterval{1000};
constexpr std::chrono::milliseconds kDefaultHeartbeatTimeout{10000};

enum class MessageType : uint16_t {
  kHello = 1,         // client -> coordinator: payload = token (raw bytes)
  kWelcome = 2,       // coordinator -> client: {}
  kError = 3,         // either way: {"code": int, "message": str}; then close
  kRegister = 10,     // node: {"executor_id", "host", "port", "pid", "gpus"}
  kRegistered = 11,   // {"num_nodes", "registered"}
  kAwaitCluster = 12, // node: {} ; answered by kClusterSpec once all registered
  kClusterSpec = 13,  // {"cluster_spec", "job_name", "task_index", "worker_num", ...}
  kHeartbeat = 20,    // node: {"state"}
  kNodeOutput = 21,   // node: {"generation", "lines": [["stdout"|"stderr", text], ...]}
  kNodeMetrics = 22,  // node: {"generation", "step", "epoch", "metrics": {name: number}}
  kReportExit = 30,   // node: {"exit_code", "signal", "stopped", "traceback", "stderr_tail"}
  kReportAck = 31,    // {}
  kBarrier = 40,      // node: {"name"}
  kBarrierDone = 41,  // {"name"}
  kAbort = 50,        // coordinator -> nodes: {"reason"}; nodes kill their processes
  kStop = 51,         // coordinator -> service nodes (ps, evaluator): finish cleanly
  kGetStatus = 60,    // any client: {}
  kStatus = 61,       // the cluster's status JSON
  kFeedSync = 70,     // TF process: {"executor_id", "qname", "delivered", "closed", "consumed",
                      //              "dropped", "finished", "batches", "wait_us", "ring_fill"}
  kFeedState = 71,    // {"min_delivered", "all_closed"} over the workers of the cluster
  kFeedAssign = 72,   // feeding task: {"feed", "partition", "partitions", "host", "generation"}
  kFeedTarget = 73,   // {"executor_id"}: the node partition `partition` of feed `feed` goes to
  // Node agent feed service (docs/protocol.md), same framing and HELLO:
  kFeedOpen = 80,     // task: {"qname", "partition", "inference", "close"}
  kFeedReady = 81,    // agent: {"ring", "local"}; local tasks then push into the ring
  kFeedData = 82,     // remote task -> agent: payload = one encoded batch (not JSON)
  kFeedEnd = 83,      // task: {} ; the partition is complete
  kFeedDone = 84,     // agent: {"rows", "results"}
  kFeedResult = 85,   // agent -> remote task: payload = one encoded result batch
};

std::string_view MessageTypeName(MessageType type);

struct Frame {
  MessageType type = MessageType::kError;
  std::string payload;
};

// A frame whose payload lies in the decoder's (or connection's) buffer: valid until the
// next call on that decoder (or connection).
struct FrameView {
  MessageType type = MessageType::kError;
  std::string_view payload;
};

// A frame's type and payload size, its payload not read yet (Connection::ReceiveHeader).
struct FrameHeader {
  MessageType type = MessageType::kError;
  uint32_t payload_size = 0;
};

// The 12-byte header of a frame of `type` whose payload is `payload_size` bytes.
void EncodeFrameHeader(MessageType type, uint32_t payload_size, char out[kFrameHeaderSize]);

// Appends a frame whose payload is the concatenation of `payload_parts`.
void AppendFrame(MessageType type, std::span<const std::string_view> payload_parts,
                 std::string* out);
inline void AppendFrame(MessageType type, std::string_view payload, std::string* out) {
  AppendFrame(type, std::span<const std::string_view>(&payload, 1), out);
}

// Splits a byte stream into frames. Errors are sticky: after a bad magic,
// version or size the stream cannot be resynchronised and must be closed.
class FrameDecoder {
 public:
  explicit FrameDecoder(size_t max_frame_size = kDefaultMaxFrameSize)
      : max_frame_size_(max_frame_size) {}
  void Feed(std::string_view bytes);
  // Room for at least `min` bytes after those buffered, or for the rest of the frame
  // being decoded when that is more (up to the size limit): read bytes into it, then
  // Commit(n) the n that were read. Nothing else may run between the two.
  std::span<char> Reserve(size_t min);
  void Commit(size_t n) { end_ += n; }
  // OK with *have = false when more bytes are needed. InvalidArgument for a bad
  // header, ResourceExhausted for a frame over the size limit.
  Status Next(Frame* frame, bool* have);
  // The same without copying the payload out (see FrameView).
  Status NextView(FrameView* frame, bool* have);
  // Only the next frame's header, checked as Next checks it: the payload's bytes
  // come next (TakeBuffered, then from the stream).
  Status NextHeader(FrameHeader* header, bool* have);
  // Moves up to into.size() buffered bytes into `into`; returns how many.
  size_t TakeBuffered(std::span<char> into);
  size_t buffered() const { return end_ - begin_; }

 private:
  // The header at begin_, checked (errors are sticky): *have = false while fewer than
  // its 12 bytes are buffered.
  Status PeekHeader(uint16_t* type, uint32_t* len, bool* have);
  std::unique_ptr<char[]> buf_;  // bytes [begin_, end_) are buffered
  size_t capacity_ = 0, begin_ = 0, end_ = 0;
  size_t max_frame_size_;
  Status error_;
};

// Constant-time comparison (no early exit on the first difference).
bool TokensEqual(std::string_view a, std::string_view b);

// A blocking client connection, authenticated. Not thread-safe.
class Connection {
 public:
  // Connects, sends HELLO and waits for WELCOME. Errors name the address:
  // "connect 10.0.0.5:4711: Connection refused", Unauthenticated for a wrong
  // token.
  static Result<Connection> Open(const HostPort& addr, const std::string& token,
                                 std::chrono::milliseconds timeout = kDefaultConnectTimeout,
                                 const std::string& local_ip = "");
  // The same over an already connected socket (e.g. a Unix socket).
  static Result<Connection> Handshake(UniqueFd fd, HostPort peer, const std::string& token,
                                      std::chrono::milliseconds timeout);
  // Server side: waits for HELLO, checks the token, answers WELCOME (or an
  // error frame and Unauthenticated).
  static Result<Connection> Accept(UniqueFd fd, HostPort peer, const std::string& token,
                                   std::chrono::milliseconds timeout);
  Status Send(MessageType type, std::string_view payload);
  // Waits up to timeout for the next frame: DeadlineExceeded when none came,
  // Unavailable when the peer closed; a kError frame becomes its Status.
  Result<Frame> Receive(std::chrono::milliseconds timeout);
  // The same without copying the payload out (see FrameView): for bulk data.
  Result<FrameView> ReceiveView(std::chrono::milliseconds timeout);
  // For bulk payloads received straight into the caller's memory: waits up to
  // timeout for the next frame's header and returns it, its payload unread; the
  // caller then reads exactly payload_size bytes with ReadPayload before any other
  // call. A kError frame is read whole and becomes its Status.
  Result<FrameHeader> ReceiveHeader(std::chrono::milliseconds timeout);
  // Fills `into` with the payload's next into.size() bytes, waiting at most
  // `timeout` for each read. Unavailable if the peer closed mid-payload.
  Status ReadPayload(std::span<char> into, std::chrono::milliseconds timeout);
  // Sends a request and waits for a reply of type `expect`, skipping nothing:
  // any other type is an error.
  Result<Frame> Call(MessageType type, std::string_view payload, MessageType expect,
                     std::chrono::milliseconds timeout);
  // For poll loops: reads what is available into the decoder (non-blocking).
  // Unavailable when the peer closed and this call read nothing: the frames it sent
  // before its close are buffered first.
  Status ReadAvailable();
  // The next complete frame already read, if any.
  Result<bool> NextBuffered(Frame* frame);
  Result<bool> NextBufferedView(FrameView* frame);
  int fd() const { return fd_.get(); }
  const HostPort& peer() const { return peer_; }

 private:
  Connection(UniqueFd fd, HostPort peer) : fd_(std::move(fd)), peer_(std::move(peer)) {}
  // Waits up to `timeout` for the socket to be readable: DeadlineExceeded naming `what`.
  Status WaitReadable(std::chrono::steady_clock::time_point deadline,
                      std::chrono::milliseconds timeout, const char* what);
  UniqueFd fd_;
  HostPort peer_;
  FrameDecoder decoder_;
};

// Turns a kError payload into a Status (message prefixed by the peer).
Status ErrorFromPayload(std::string_view payload, const std::string& peer);
std::string ErrorPayload(const Status& st);

}  // namespace sparktf::cluster
