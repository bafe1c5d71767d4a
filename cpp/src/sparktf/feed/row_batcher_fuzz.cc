// libFuzzer target: RowBatcher's append paths on arbitrary input, then the
// batch it encodes. Whatever is appended, and whatever is refused, a batch
// that Take returns must decode, with every column holding every row.
//
// Input: one mode byte, then
//   mode 0: pickles, each as u16 length + bytes, through AppendPickled (a
//           length byte above 0x8000 takes the batch first);
//   mode 1: a width byte, a signature byte per column, then rows of values
//           read from the rest through ColumnBuilder's puts, as the bindings
//           put Python values (a refused put starts a new batch).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

#include "sparktf/feed/row_batcher.h"

namespace {
using namespace sparktf::feed;

struct Input {
  std::string_view rest;
  bool Empty() const { return rest.empty(); }
  uint8_t Byte() {
    if (rest.empty()) return 0;
    const uint8_t b = static_cast<uint8_t>(rest[0]);
    rest.remove_prefix(1);
    return b;
  }
  std::string_view Take(size_t n) {
    n = std::min(n, rest.size());
    std::string_view out = rest.substr(0, n);
    rest.remove_prefix(n);
    return out;
  }
};

void CheckTaken(RowBatcher& b) {
  const uint64_t rows = b.rows();
  const size_t width = b.width();
  auto taken = b.Take();
  if (rows == 0) {
    if (taken.ok()) __builtin_trap();  // no rows is refused
    return;
  }
  if (!taken.ok()) __builtin_trap();
  uint64_t decoded_rows = 0;
  std::vector<ColumnView> columns;
  if (!DecodeBatch(*taken, &decoded_rows, &columns).ok()) __builtin_trap();
  if (decoded_rows != rows || columns.size() != width) __builtin_trap();
  for (const ColumnView& c : columns) {
    if (c.dims.empty() || c.dims[0] != rows) __builtin_trap();
  }
}

void Pickles(Input in) {
  RowBatcher b;
  while (in.rest.size() >= 2) {
    uint16_t len;
    std::memcpy(&len, in.Take(2).data(), 2);
    if (len & 0x8000) CheckTaken(b);
    const uint64_t before = b.rows();
    const int64_t n = b.AppendPickled(in.Take(len & 0x7fff));
    if (n < 0 ? b.rows() != before : b.rows() != before + static_cast<uint64_t>(n)) {
      __builtin_trap();  // -1 appends nothing; n appends n rows
    }
  }
  CheckTaken(b);
}

ColumnSignature SignatureOf(uint8_t s) {
  static constexpr ColumnType kTypes[] = {ColumnType::kFloat32, ColumnType::kFloat64,
                                          ColumnType::kInt32,   ColumnType::kInt64,
                                          ColumnType::kUInt8,   ColumnType::kBool};
  switch (s % 3) {
    case 0: {
      static constexpr ColumnType kScalars[] = {ColumnType::kFloat32, ColumnType::kInt64,
                                                ColumnType::kBool, ColumnType::kBytes};
      return {ColumnShape::kScalar, kScalars[(s / 3) % 4], {}};
    }
    case 1: {
      static constexpr ColumnType kNumbers[] = {ColumnType::kFloat32, ColumnType::kInt64,
                                                ColumnType::kBool};
      return {ColumnShape::kSequence, kNumbers[(s / 3) % 3], {static_cast<uint64_t>(s / 9 % 4)}};
    }
    default:
      return {ColumnShape::kArray, kTypes[(s / 3) % 6], {1u + s / 18 % 3, 1u + s / 54 % 2}};
  }
}

// Puts one value into `c` as the bindings would; false if refused.
bool Put(ColumnBuilder& c, Input& in) {
  const ColumnSignature& s = c.signature();
  const uint8_t op = in.Byte();
  switch (s.shape) {
    case ColumnShape::kScalar:
      if (s.type == ColumnType::kBytes) {
        c.PutText(in.Take(op % 32));
      } else if (s.type == ColumnType::kFloat32) {
        c.PutFloat32(static_cast<float>(op) / 3);
      } else if (s.type == ColumnType::kInt64) {
        c.PutInt64(static_cast<int64_t>(op) - 128);
      } else {
        c.PutBool(op & 1);
      }
      return true;
    case ColumnShape::kSequence: {
      const uint64_t n = (op & 0x80) ? op % 5 : s.inner[0];  // sometimes the wrong length
      if (!c.CheckSequence(n).ok()) return false;
      char* out = c.Extend(n);
      const std::string_view bytes = in.Take(n * ItemSize(s.type));
      std::memcpy(out, bytes.data(), bytes.size());
      if ((op & 0x40) && n > 0) {  // a value Python refuses midway: taken back, then put
        c.Unextend(1);
        if (s.type == ColumnType::kFloat32) {
          c.PutFloat32(0);
        } else if (s.type == ColumnType::kInt64) {
          c.PutInt64(0);
        } else {
          c.PutBool(false);
        }
      }
      return true;
    }
    case ColumnShape::kArray: {
      std::vector<uint64_t> shape = s.inner;
      ColumnType type = s.type;
      if (op & 0x80) shape[0] += 1;
      if (op & 0x40) type = ColumnType::kFloat64;
      size_t bytes = NumValues(shape) * ItemSize(type);
      if (op & 0x20) bytes -= 1;
      const std::string_view data = in.Take(bytes);
      return c.PutArray(type, shape, data).ok();
    }
  }
  return false;
}

void Typed(Input in) {
  const size_t width = 1 + in.Byte() % 4;
  std::vector<ColumnSignature> sigs;
  for (size_t c = 0; c < width; ++c) sigs.push_back(SignatureOf(in.Byte()));
  RowBatcher b;
  while (!in.Empty()) {
    if (b.rows() == 0) {
      if (!b.StartBatch(true, width).ok()) __builtin_trap();
      for (size_t c = 0; c < width; ++c) b.column(c).Start(sigs[c]);
    }
    bool ok = true;
    for (size_t c = 0; ok && c < width; ++c) {
      ok = Put(b.column(c), in);
      if (ok) b.column(c).EndRow();
    }
    if (!ok) {  // the task fails in Python; here, the next batch
      b.Clear();
      continue;
    }
    b.EndRow();
    if ((b.rows() & 7) == 0 && (in.Byte() & 1)) CheckTaken(b);
  }
  CheckTaken(b);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Input in{std::string_view(reinterpret_cast<const char*>(data), size)};
  if (in.Byte() & 1) {
    Typed(in);
  } else {
    Pickles(in);
  }
  return 0;
}
