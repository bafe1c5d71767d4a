// libFuzzer target: TFRecord framing (and zlib streams) on arbitrary bytes.
// The first byte picks compression and skip-corrupt mode; the rest is the file.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sparktf/record/record_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  using namespace sparktf;
  RecordReaderOptions o;
  o.compression = static_cast<Compression>(data[0] % 3);
  o.skip_corrupt = (data[0] & 4) != 0;
  o.buffer_size = 64 + (data[0] >> 3);  // small buffers exercise refills
  std::string_view file(reinterpret_cast<const char*>(data + 1), size - 1);
  auto reader = RecordReader::Make(MakeMemoryInputStream(file), o);
  if (!reader.ok()) return 0;
  std::string_view rec;
  uint64_t total = 0;
  for (int i = 0; i < 100000; ++i) {
    Status st = (*reader)->ReadRecord(&rec);
    if (!st.ok()) {
      if (!st.IsOutOfRange() && !st.IsDataLoss() && st.code() != StatusCode::kIOError) {
        __builtin_trap();  // only end of file or data loss are expected
      }
      break;
    }
    total += rec.size();
  }
  if (o.compression == Compression::kNone && total > file.size()) __builtin_trap();
  return 0;
}
