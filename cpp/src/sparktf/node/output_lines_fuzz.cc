// libFuzzer target: a node agent's cutting of its TF process's output into NODE_OUTPUT
// lines (output_lines.h). The input is split into writes to stdout and stderr at
// input-chosen points; every payload must be JSON whose lines hold no line break and
// stay within the limits, whatever bytes were written.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>

#include "sparktf/node/output_lines.h"

using namespace sparktf;

namespace {

void Check(node::OutputLines& out) {
  auto j = nlohmann::json::parse(out.TakePayload(1), nullptr, false);
  if (!j.is_object() || !j["lines"].is_array()) __builtin_trap();
  size_t held = 0;
  for (const auto& line : j["lines"]) {
    const auto& text = line.at(1).get_ref<const std::string&>();
    if (text.find_first_of("\r\n") != std::string::npos) __builtin_trap();
    if (line.at(0) != "stderr" || text.rfind("[sparktf: ", 0) != 0) held += text.size();
  }
  // Each invalid byte may become a 3-byte U+FFFD; the raw bytes stay within 64.
  if (held > 3 * 64) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  node::OutputLines out(/*max_line=*/16, /*max_pending=*/64);
  size_t i = 0;
  while (i < size) {
    const size_t n = std::min<size_t>(data[i] >> 1, size - i - 1);
    const auto stream = (data[i] & 1) ? node::OutputLines::kStderr : node::OutputLines::kStdout;
    out.Append(stream, {reinterpret_cast<const char*>(data) + i + 1, n});
    i += 1 + n;
    if (out.pending_bytes() > 64) __builtin_trap();
    if (i % 3 == 0) Check(out);
  }
  out.FinishPartial();
  Check(out);
  return 0;
}
