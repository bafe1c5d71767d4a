// libFuzzer target: what a feed ring or a remote feeding task can deliver to
// a consumer: the batch decoder, re-cutting batches (BatchAssembler), batch
// tags and partition markers, on arbitrary bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sparktf/feed/batch.h"
#include "sparktf/feed/stream.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparktf::feed;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  (void)DecodeMarker(in);
  if (auto tag = DecodeTag(in); tag.ok() && EncodeTag(*tag) != in.substr(0, kTagSize)) {
    __builtin_trap();
  }
  uint64_t rows = 0;
  std::vector<ColumnView> cols;
  if (DecodeBatch(in, &rows, &cols).ok()) {
    std::string again;
    if (!EncodeBatch(cols, rows, &again).ok() || again != in) __builtin_trap();
    // Two copies (the second tagged, without its first half), re-cut into
    // uneven batches: every row comes out once.
    BatchAssembler a;
    if (!a.Add(std::string(in)).ok() ||
        !a.Add(EncodeTag(BatchTag{}) + std::string(in), kTagSize, rows / 2).ok()) {
      __builtin_trap();
    }
    uint64_t taken = 0;
    std::string out;
    for (uint64_t n = 1; a.rows() > 0; n = n * 2 + 1) {
      if (!a.Take(n, &out).ok()) __builtin_trap();
      uint64_t got = 0;
      std::vector<ColumnView> back;
      if (!DecodeBatch(out, &got, &back).ok()) __builtin_trap();
      taken += got;
    }
    if (taken != 2 * rows - rows / 2) __builtin_trap();
  }
  return 0;
}
