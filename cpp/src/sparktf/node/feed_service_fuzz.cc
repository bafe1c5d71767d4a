// libFuzzer target: the node agent's feed service. Feeds arbitrary bytes as one
// connection (after a valid HELLO when the first input byte is odd) to a feed server,
// new for each input, whose TF process has created the "input" ring, and checks that
// the server still answers a fresh connection's HELLO.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "sparktf/feed/ring.h"
#include "sparktf/node/feed_service.h"

using namespace sparktf;
using namespace sparktf::cluster;
using namespace std::chrono_literals;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static int n = 0;
  const std::string cluster_id = "fz" + std::to_string(::getpid()) + "_" + std::to_string(n++);
  auto ring = feed::Ring::Create(*node::FeedRingName(cluster_id, 0, "input"), 1 << 16);
  if (!ring.ok()) __builtin_trap();
  // Short waits: a session that waits for a ring or for room gives up quickly.
  auto server = node::FeedServer::Start({cluster_id, 0, "fuzz-token", "127.0.0.1", 100ms});
  if (!server.ok()) __builtin_trap();
  auto fd = ConnectTcp({"127.0.0.1", (*server)->port()}, 1000ms);
  if (!fd.ok()) __builtin_trap();
  std::string bytes;
  if (size && (data[0] & 1)) AppendFrame(MessageType::kHello, "fuzz-token", &bytes);
  bytes.append(reinterpret_cast<const char*>(data), size);
  (void)WriteAll(fd->get(), bytes);
  ::shutdown(fd->get(), SHUT_WR);
  char buf[4096];
  while (::recv(fd->get(), buf, sizeof(buf), 0) > 0) {
  }
  auto conn = Connection::Open({"127.0.0.1", (*server)->port()}, "fuzz-token", 2000ms);
  if (!conn.ok()) __builtin_trap();
  return 0;
}
