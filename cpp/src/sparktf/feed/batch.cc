#include "sparktf/feed/batch.h"

#include <cstring>
#include <limits>

namespace sparktf::feed {
namespace {

size_t Pad8(size_t n) { return (n + 7) & ~size_t{7}; }
size_t PadPayload(size_t n) { return (n + kPayloadAlign - 1) & ~(kPayloadAlign - 1); }

template <typename T>
void Put(std::string* out, T v) {
  out->append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// Pads `out` so that its size past its first `start` bytes is a multiple of 8, or of
// kPayloadAlign.
void PadTo8(std::string* out, size_t start) {
  const size_t n = out->size() - start;
  out->append(Pad8(n) - n, '\0');
}
void PadToPayload(std::string* out, size_t start) {
  const size_t n = out->size() - start;
  out->append(PadPayload(n) - n, '\0');
}

class Cursor {
 public:
  explicit Cursor(std::string_view d) : d_(d) {}
  template <typename T>
  bool Get(T* v) {
    if (d_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, d_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool Take(uint64_t n, std::string_view* v) {
    if (n > d_.size() - pos_) return false;
    *v = d_.substr(pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return true;
  }
  // Skips padding to the next multiple of `to` (a power of 2); padding must be zero bytes.
  bool Align(size_t to = 8) {
    size_t p = (pos_ + to - 1) & ~(to - 1);
    if (p > d_.size()) return false;
    for (; pos_ < p; ++pos_) {
      if (d_[pos_] != 0) return false;
    }
    return true;
  }
  bool done() const { return pos_ == d_.size(); }

 private:
  std::string_view d_;
  size_t pos_ = 0;
};

Status Bad(const std::string& what) {
  return Status::InvalidArgument("malformed feed batch: " + what);
}

// Checks that a column's payload length matches its type and shape.
Status CheckPayload(const ColumnView& c) {
  const uint64_t n = NumValues(c.dims);
  if (c.type == ColumnType::kBytes) {
    const uint64_t offsets_bytes = (n + 1) * 8;
    if (n > (std::numeric_limits<uint64_t>::max() / 8) - 1 || c.data.size() < offsets_bytes) {
      return Bad("column '" + c.name + "': bytes payload shorter than its offsets");
    }
    uint64_t prev = 0;
    const uint64_t data_size = c.data.size() - offsets_bytes;
    for (uint64_t i = 0; i <= n; ++i) {
      uint64_t off;
      std::memcpy(&off, c.data.data() + i * 8, 8);
      if (off < prev || off > data_size || (i == 0 && off != 0)) {
        return Bad("column '" + c.name + "': bad bytes offset at value " + std::to_string(i));
      }
      prev = off;
    }
    if (prev != data_size) return Bad("column '" + c.name + "': bytes data length mismatch");
    return Status::OK();
  }
  const size_t item = ItemSize(c.type);
  if (item == 0) return Bad("column '" + c.name + "': unknown dtype");
  if (n != 0 && c.data.size() / item != n) {
    return Bad("column '" + c.name + "': " + std::to_string(c.data.size()) + " bytes for " +
               std::to_string(n) + " values of " + std::string(ColumnTypeName(c.type)));
  }
  if (c.data.size() != n * item) return Bad("column '" + c.name + "': payload size mismatch");
  return Status::OK();
}

}  // namespace

size_t ItemSize(ColumnType type) {
  switch (type) {
    case ColumnType::kFloat32: return 4;
    case ColumnType::kFloat64: return 8;
    case ColumnType::kInt32: return 4;
    case ColumnType::kInt64: return 8;
    case ColumnType::kUInt8: return 1;
    case ColumnType::kBool: return 1;
    case ColumnType::kBytes: return 0;
  }
  return 0;
}

std::string_view ColumnTypeName(ColumnType type) {
  switch (type) {
    case ColumnType::kFloat32: return "float32";
    case ColumnType::kFloat64: return "float64";
    case ColumnType::kInt32: return "int32";
    case ColumnType::kInt64: return "int64";
    case ColumnType::kUInt8: return "uint8";
    case ColumnType::kBool: return "bool";
    case ColumnType::kBytes: return "bytes";
  }
  return "?";
}

uint64_t NumValues(const std::vector<uint64_t>& dims) {
  if (dims.empty()) return 0;
  uint64_t n = 1;
  for (uint64_t d : dims) {
    if (d != 0 && n > std::numeric_limits<uint64_t>::max() / d) {
      return std::numeric_limits<uint64_t>::max();
    }
    n *= d;
  }
  return n;
}

size_t EncodedBatchSize(const std::vector<ColumnView>& columns) {
  size_t n = 16;
  for (const auto& c : columns) {
    n += 16 + 8 * c.dims.size() + Pad8(c.name.size());
  }
  n = PadPayload(n);
  for (const auto& c : columns) n += PadPayload(c.data.size());
  return n;
}

Status EncodeBatchHeader(const std::vector<ColumnView>& columns, uint64_t num_rows,
                         const std::vector<uint64_t>& payload_sizes, std::string* out) {
  if (columns.size() > kMaxBatchColumns) return Bad("too many columns");
  if (payload_sizes.size() != columns.size()) return Status::Internal("one payload size per column");
  for (const auto& c : columns) {
    if (c.dims.empty() || c.dims[0] != num_rows || c.dims.size() > kMaxBatchDims) {
      return Status::InvalidArgument("column '" + c.name + "' does not have " +
                                     std::to_string(num_rows) + " rows");
    }
    if (c.name.size() > 65535) return Status::InvalidArgument("column name too long");
  }
  const size_t start = out->size();
  Put<uint32_t>(out, kBatchMagic);
  Put<uint32_t>(out, static_cast<uint32_t>(columns.size()));
  Put<uint64_t>(out, num_rows);
  for (size_t i = 0; i < columns.size(); ++i) {
    const ColumnView& c = columns[i];
    Put<uint8_t>(out, static_cast<uint8_t>(c.type));
    Put<uint8_t>(out, static_cast<uint8_t>(c.dims.size()));
    Put<uint16_t>(out, static_cast<uint16_t>(c.name.size()));
    Put<uint32_t>(out, (c.row_arrays && c.dims.size() >= 2 ? kRowArrays : 0) |
                           (c.text && c.type == ColumnType::kBytes ? kText : 0));
    for (uint64_t d : c.dims) Put<uint64_t>(out, d);
    Put<uint64_t>(out, payload_sizes[i]);
    out->append(c.name);
    PadTo8(out, start);
  }
  PadToPayload(out, start);
  return Status::OK();
}

Status EncodeBatchParts(const std::vector<ColumnView>& columns, uint64_t num_rows,
                        BatchParts* out) {
  static constexpr char kZeros[kPayloadAlign] = {};
  std::vector<uint64_t> sizes;
  for (const auto& c : columns) {
    sizes.push_back(c.data.size());
    if (!c.dims.empty() && c.dims[0] == num_rows) RETURN_NOT_OK(CheckPayload(c).WithContext("encode"));
  }
  out->header.clear();
  out->parts.clear();
  RETURN_NOT_OK(EncodeBatchHeader(columns, num_rows, sizes, &out->header));
  out->parts.push_back(out->header);
  for (const auto& c : columns) {
    if (!c.data.empty()) out->parts.push_back(c.data);
    if (const size_t pad = PadPayload(c.data.size()) - c.data.size()) {
      out->parts.emplace_back(kZeros, pad);
    }
  }
  return Status::OK();
}

Status EncodeBatch(const std::vector<ColumnView>& columns, uint64_t num_rows,
                   std::string* out) {
  BatchParts parts;
  RETURN_NOT_OK(EncodeBatchParts(columns, num_rows, &parts));
  out->reserve(out->size() + EncodedBatchSize(columns));
  for (std::string_view p : parts.parts) out->append(p);
  return Status::OK();
}

Status DecodeBatch(std::string_view data, uint64_t* num_rows, std::vector<ColumnView>* columns) {
  columns->clear();
  Cursor cur(data);
  uint32_t magic = 0, count = 0;
  if (!cur.Get(&magic) || magic != kBatchMagic) return Bad("bad magic");
  if (!cur.Get(&count) || !cur.Get(num_rows)) return Bad("truncated header");
  if (count > kMaxBatchColumns) return Bad("too many columns");
  std::vector<uint64_t> lengths;
  for (uint32_t i = 0; i < count; ++i) {
    ColumnView c;
    uint8_t type, ndim;
    uint16_t name_len;
    uint32_t flags;
    if (!cur.Get(&type) || !cur.Get(&ndim) || !cur.Get(&name_len) || !cur.Get(&flags)) {
      return Bad("truncated column header");
    }
    if ((flags & ~(kRowArrays | kText)) != 0) return Bad("unknown column flags");
    if ((flags & kRowArrays) && ndim < 2) return Bad("row-arrays flag on a column of scalars");
    if ((flags & kText) && type != static_cast<uint8_t>(ColumnType::kBytes)) {
      return Bad("text flag on a column of numbers");
    }
    c.row_arrays = (flags & kRowArrays) != 0;
    c.text = (flags & kText) != 0;
    if (type > static_cast<uint8_t>(ColumnType::kBytes)) return Bad("unknown dtype");
    if (ndim == 0 || ndim > kMaxBatchDims) return Bad("bad number of dimensions");
    c.type = static_cast<ColumnType>(type);
    c.dims.resize(ndim);
    for (auto& d : c.dims) {
      if (!cur.Get(&d)) return Bad("truncated dimensions");
    }
    if (c.dims[0] != *num_rows) return Bad("column rows differ from the batch's");
    uint64_t len;
    std::string_view name;
    if (!cur.Get(&len) || !cur.Take(name_len, &name) || !cur.Align()) {
      return Bad("truncated column name");
    }
    c.name = std::string(name);
    lengths.push_back(len);
    columns->push_back(std::move(c));
  }
  if (!cur.Align(kPayloadAlign)) return Bad("truncated or bad padding after the column headers");
  for (size_t i = 0; i < columns->size(); ++i) {
    if (!cur.Take(lengths[i], &(*columns)[i].data) || !cur.Align(kPayloadAlign)) {
      return Bad("column '" + (*columns)[i].name + "' runs past the end or has bad padding");
    }
    RETURN_NOT_OK(CheckPayload((*columns)[i]));
  }
  if (!cur.done()) return Bad("trailing bytes");
  return Status::OK();
}

}  // namespace sparktf::feed
