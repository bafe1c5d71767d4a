// libFuzzer target: the feed batch decoder on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sparktf/feed/batch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparktf::feed;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  uint64_t rows = 0;
  std::vector<ColumnView> cols;
  if (DecodeBatch(in, &rows, &cols).ok()) {
    std::string again;
    if (!EncodeBatch(cols, rows, &again).ok() || again != in) __builtin_trap();
  }
  return 0;
}
