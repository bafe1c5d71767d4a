// libFuzzer target: the coordinator's frame decoder and message handling.
// Feeds arbitrary bytes as one connection to a real coordinator, new for each input
// (after a valid HELLO when the first input byte is odd), and checks that it keeps serving.
#include <sys/socket.h>

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "sparktf/cluster/coordinator.h"

using namespace sparktf;
using namespace sparktf::cluster;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The decoder alone, byte-split at an input-chosen point.
  {
    FrameDecoder d(4096);
    const size_t cut = size ? data[0] % (size + 1) : 0;
    d.Feed({reinterpret_cast<const char*>(data), cut});
    Frame f;
    bool have = false;
    for (int i = 0; i < 4 && d.Next(&f, &have).ok() && have; ++i) {
    }
    d.Feed({reinterpret_cast<const char*>(data) + cut, size - cut});
    for (int i = 0; i < 1000 && d.Next(&f, &have).ok() && have; ++i) {
      if (f.payload.size() > 4096) __builtin_trap();
    }
  }
  // Read as Connection reads a socket: into Reserve's room, in input-chosen chunks, with
  // frames taken between reads; the frames must be those of the bytes fed at once.
  {
    FrameDecoder whole(4096), chunked(4096);
    whole.Feed({reinterpret_cast<const char*>(data), size});
    std::vector<Frame> want, got;
    Frame f;
    bool have = false;
    Status wst, cst;
    while ((wst = whole.Next(&f, &have)).ok() && have) want.push_back(f);
    size_t at = 0;
    for (size_t k = 0; at < size && cst.ok(); ++k) {
      const size_t chunk = 1 + data[k % size] % 97;
      std::span<char> room = chunked.Reserve(chunk);
      if (room.size() < chunk) __builtin_trap();
      const size_t n = std::min({room.size(), size - at, chunk * 13});
      std::memcpy(room.data(), data + at, n);
      chunked.Commit(n);
      at += n;
      while ((cst = chunked.Next(&f, &have)).ok() && have) got.push_back(f);
    }
    if (got.size() != want.size() || cst.code() != wst.code()) __builtin_trap();
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i].type != want[i].type || got[i].payload != want[i].payload) __builtin_trap();
    }
    // Read as Connection::ReceiveHeader and ReadPayload read a bulk frame: the header
    // from the decoder, the payload's buffered part out of it, the rest from the stream.
    FrameDecoder headed(4096);
    const size_t lead = size ? data[size - 1] % (size + 1) : 0;  // bytes buffered first
    headed.Feed({reinterpret_cast<const char*>(data), lead});
    at = lead;
    size_t frames = 0;
    FrameHeader h;
    Status hst;
    while (true) {
      hst = headed.NextHeader(&h, &have);
      if (!hst.ok()) break;
      if (!have) {
        if (at == size) break;
        const size_t n = std::min<size_t>(kFrameHeaderSize, size - at);
        headed.Feed({reinterpret_cast<const char*>(data) + at, n});
        at += n;
        continue;
      }
      std::string payload(h.payload_size, '\0');
      size_t filled = headed.TakeBuffered({payload.data(), payload.size()});
      const size_t rest = std::min(payload.size() - filled, size - at);
      std::memcpy(payload.data() + filled, data + at, rest);
      at += rest;
      filled += rest;
      if (filled < payload.size()) break;  // the input ends within this payload
      if (frames >= want.size() || want[frames].type != h.type ||
          want[frames].payload != payload) {
        __builtin_trap();
      }
      ++frames;
    }
    // The same frames, and the same error where the stream goes bad.
    if (frames != want.size() || hst.code() != wst.code()) __builtin_trap();
  }
  // A live coordinator, fresh for each input: an input that forms a cluster must not
  // leave the next ones exploring its end state, and any crash reproduces from its input.
  CoordinatorOptions o;
  o.bind_host = "127.0.0.1";
  o.token = "fuzz-token";
  o.num_nodes = 2;
  o.max_frame_size = 4096;
  std::unique_ptr<Coordinator> coord = std::move(Coordinator::Start(o)).ValueOrDie();
  auto fd = ConnectTcp({"127.0.0.1", coord->port()}, std::chrono::milliseconds(1000));
  if (!fd.ok()) __builtin_trap();
  std::string bytes;
  if (size && (data[0] & 1)) AppendFrame(MessageType::kHello, "fuzz-token", &bytes);
  bytes.append(reinterpret_cast<const char*>(data), size);
  (void)WriteAll(fd->get(), bytes);
  ::shutdown(fd->get(), SHUT_WR);
  char buf[4096];
  while (::recv(fd->get(), buf, sizeof(buf), 0) > 0) {
  }
  // Still serving: a fresh authenticated connection asks for status.
  auto conn = Connection::Open({"127.0.0.1", coord->port()}, "fuzz-token",
                               std::chrono::milliseconds(2000));
  if (!conn.ok()) __builtin_trap();
  auto st = conn->Call(MessageType::kGetStatus, "{}", MessageType::kStatus,
                       std::chrono::milliseconds(2000));
  if (!st.ok()) __builtin_trap();
  coord->Shutdown();
  return 0;
}
