// libFuzzer target: a node agent's reading of the coordinator's frames (agent_frames.h).
// The input is a byte stream as it arrives on the agent's connection; every frame it
// decodes is read as the agent reads it, and a cluster spec becomes the TF process's
// environment. Nothing may crash or throw, whatever the JSON holds.
#include <cstddef>
#include <cstdint>

#include "sparktf/node/agent_frames.h"

using namespace sparktf;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cluster::FrameDecoder decoder(1 << 16);
  decoder.Feed({reinterpret_cast<const char*>(data), size});
  cluster::Frame f;
  bool have = false;
  for (int i = 0; i < 1000 && decoder.Next(&f, &have).ok() && have; ++i) {
    auto r = node::ReadCoordinatorFrame(f);
    if (!r.ok()) {
      if (f.type != cluster::MessageType::kClusterSpec) __builtin_trap();
      continue;
    }
    if (r->kind == node::CoordinatorRequest::Kind::kClusterSpec) {
      if (!r->spec.is_object()) __builtin_trap();
      const auto env = node::SpecEnvironment(r->spec);
      if (env.size() != 2 || env.at("SPARKTF_CLUSTER_INFO").empty()) __builtin_trap();
      (void)node::IsTensorBoardNode(r->spec);
    }
  }
  return 0;
}
