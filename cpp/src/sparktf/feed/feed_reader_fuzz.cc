// libFuzzer target: a TF process's FeedReader reading whatever producers put in
// its ring. The input is a sequence of messages, each "u16 length | bytes"
// (batches, tagged batches, partition markers, or garbage), pushed into a new
// ring, those of odd length aligned as a feeding task aligns them (read in
// place), those of length 2 mod 4 reserved, written and given up (the reader
// skips them), and the others not aligned (copied out); then the input is closed and the
// reader drains it in batches of 3 rows, keeping every batch, so that held
// messages move out of the small ring. It must end with a value or an error,
// never crash or hang, every row it took in must be accounted for, and every
// kept batch must still read back.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "sparktf/feed/consumer.h"
#include "sparktf/feed/ring.h"
#include "sparktf/feed/stream.h"

using namespace sparktf;
using namespace sparktf::feed;
using namespace std::chrono_literals;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int n = 0;
  const std::string name = "/sparktf-fz" + std::to_string(::getpid()) + "_" + std::to_string(n++);
  auto ring = Ring::Create(name, 1 << 16);
  if (!ring.ok()) __builtin_trap();
  auto producer = Ring::Attach(name);
  if (!producer.ok()) __builtin_trap();
  size_t at = 0;
  while (at + 2 <= size) {
    uint16_t len;
    std::memcpy(&len, data + at, 2);
    at += 2;
    len = static_cast<uint16_t>(std::min<size_t>(len, size - at));
    const std::string_view message(reinterpret_cast<const char*>(data + at), len);
    if (len % 4 == 2) {  // reserved, written, and given up: the reader must never see it
      auto space = (*producer)->Reserve(len, 100ms);
      if (!space.ok()) break;
      std::memcpy(space->bytes().data(), message.data(), len);
      space->Abandon();
    } else if (!(*producer)->Push(message, 100ms, len % 2 ? BatchStart(message) : 0).ok()) {
      break;
    }
    at += len;
  }
  (*producer)->CloseInput();
  (*producer)->Detach();
  FeedReader reader(std::move(*ring), nullptr);
  std::vector<BatchSlice> kept;
  for (int i = 0; i < 10000; ++i) {
    auto got = reader.NextSlice(3, false, 200ms);
    if (!got.ok() || !*got) break;
    kept.push_back(std::move(**got));
  }
  const FeedProgress p = reader.progress();
  if (p.consumed > p.delivered) __builtin_trap();
  std::string encoded;
  for (const BatchSlice& slice : kept) {
    if (!EncodeSlice(slice, &encoded).ok()) __builtin_trap();
  }
  return 0;
}
