// libFuzzer target: tf.train.Example / SequenceExample decoding, columnar
// decoding and schema inference on arbitrary bytes. Whatever decodes must
// re-encode to bytes that decode to the same encoding (a fixed point).
#include <cstddef>
#include <cstdint>
#include <string>

#include "sparktf/record/columnar.h"
#include "sparktf/record/example.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sparktf;
  std::string_view in(reinterpret_cast<const char*>(data), size);

  Example ex;
  if (DecodeExample(in, &ex).ok()) {
    std::string once, twice;
    EncodeExample(ex, &once);
    Example again;
    if (!DecodeExample(once, &again).ok()) __builtin_trap();
    EncodeExample(again, &twice);
    if (once != twice) __builtin_trap();
  }
  SequenceExample se;
  if (DecodeSequenceExample(in, &se).ok()) {
    std::string once;
    EncodeSequenceExample(se, &once);
    SequenceExample again;
    if (!DecodeSequenceExample(once, &again).ok()) __builtin_trap();
  }

  static const std::vector<ColumnSpec> schema = [] {
    std::vector<ColumnSpec> s(4);
    s[0].name = "a";
    s[0].dtype = DType::kInt64;
    s[0].var_len = true;
    s[1].name = "b";
    s[1].dtype = DType::kFloat32;
    s[1].shape = {2};
    s[1].has_default = true;
    s[1].default_floats = {0};
    s[2].name = "c";
    s[2].dtype = DType::kBytes;
    s[2].var_len = true;
    s[3].name = "d";
    s[3].dtype = DType::kInt64;
    s[3].has_default = true;
    s[3].default_ints = {7};
    return s;
  }();
  auto decoder = ColumnarDecoder::Make(schema);
  if (!decoder.ok()) __builtin_trap();
  (void)decoder->Append(in);
  (void)decoder->Append(in);
  auto cols = decoder->Finish();
  for (const auto& c : cols) {
    if (c.bytes_offsets.back() != static_cast<int64_t>(c.bytes_data.size()))
      __builtin_trap();
  }

  SchemaInferrer inferrer;
  (void)inferrer.Append(in);
  (void)inferrer.Schema();
  return 0;
}
