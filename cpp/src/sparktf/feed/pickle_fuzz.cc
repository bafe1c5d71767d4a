// libFuzzer target: PickledRows on arbitrary bytes (what a feeding task reads
// from Spark's stored partitions), walking every value it returns.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "sparktf/feed/pickle_rows.h"

namespace {
using sparktf::feed::PickledRows;
using sparktf::feed::PickleValue;

// Visits at most `*budget` values: a list may hold itself (through the
// memo), so the values reachable from a row are not a tree.
size_t Walk(const PickledRows& r, const PickleValue& v, int depth, size_t* budget) {
  if (*budget == 0) return 0;
  --*budget;
  size_t n = 1;
  switch (v.kind) {
    case PickleValue::Kind::kList:
    case PickleValue::Kind::kTuple:
      if (depth > 64) return n;
      for (const PickleValue& item : r.Items(v)) n += Walk(r, item, depth + 1, budget);
      break;
    case PickleValue::Kind::kStr:
    case PickleValue::Kind::kBytes:
    case PickleValue::Kind::kByteArray:
      n += r.Text(v).size() > 0 ? static_cast<unsigned char>(r.Text(v).back()) : 0;
      break;
    case PickleValue::Kind::kArray: {
      const auto& a = r.Array(v);
      n += a.data.empty() ? 0 : static_cast<unsigned char>(a.data.back());
      break;
    }
    default: break;
  }
  return n;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  PickledRows r;
  if (r.Parse(std::string_view(reinterpret_cast<const char*>(data), size)).ok()) {
    size_t n = 0;
    size_t budget = 1 << 20;
    for (size_t i = 0; i < r.rows(); ++i) n += Walk(r, r.row(i), 0, &budget);
    if (n == static_cast<size_t>(-1)) __builtin_trap();
  }
  return 0;
}
