#include "sparktf/feed/arrow_feed.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <string_view>

namespace sparktf::feed {
namespace {

// Where a column's values end up after its list levels are resolved: `count`
// values of one Arrow type, starting at physical index `index` of `array`.
struct Leaf {
  char format = 0;  // one of f g i l C c s S I b u U z Z
  const ArrowArray* array = nullptr;
  int64_t index = 0;
  int64_t count = 0;
};

Status Refuse(const std::string& column, std::string_view what) {
  return Status::InvalidArgument("column '" + column + "' " + std::string(what));
}

std::string TypeName(std::string_view format) {
  if (format.starts_with("d:")) return "decimal";
  if (format.starts_with("ts")) return "timestamp";
  if (format.starts_with("td")) return "date";
  if (format.starts_with("tt")) return "time";
  if (format.starts_with("tD") || format.starts_with("ti")) return "interval";
  if (format == "+s") return "struct";
  if (format == "+m") return "map";
  if (format == "n") return "null";
  if (format == "e") return "float16";
  if (format == "L") return "uint64";
  return "Arrow format '" + std::string(format) + "'";
}

bool IsLeafFormat(std::string_view f) {
  return f.size() == 1 && std::string_view("fgilCcsSIbuUzZ").find(f[0]) != std::string_view::npos;
}

size_t LeafItemSize(char f) {
  switch (f) {
    case 'g': case 'l': return 8;
    case 'f': case 'i': case 'I': return 4;
    case 's': case 'S': return 2;
    case 'c': case 'C': return 1;
  }
  return 0;  // b: bits; strings: variable
}

ColumnType OutputType(char f) {
  switch (f) {
    case 'f': return ColumnType::kFloat32;
    case 'g': return ColumnType::kFloat64;
    case 'i': case 'c': case 's': case 'S': return ColumnType::kInt32;
    case 'l': case 'I': return ColumnType::kInt64;
    case 'C': return ColumnType::kUInt8;
    case 'b': return ColumnType::kBool;
  }
  return ColumnType::kBytes;
}

bool Bit(const void* bitmap, int64_t i) {
  return (static_cast<const uint8_t*>(bitmap)[i >> 3] >> (i & 7)) & 1;
}

// Whether any of `n` values from physical index `index` is null.
bool HasNulls(const ArrowArray& a, int64_t index, int64_t n) {
  if (a.null_count == 0 || a.n_buffers < 1 || a.buffers[0] == nullptr) return false;
  for (int64_t i = index; i < index + n; ++i) {
    if (!Bit(a.buffers[0], i)) return true;
  }
  return false;
}

// Reads offsets [index, index + n] of a list or string array (32- or 64-bit),
// checks that they do not decrease and start at or above 0.
template <typename T>
Status ReadOffsets(const void* buffer, int64_t index, int64_t n, const std::string& column,
                   std::vector<int64_t>* out) {
  if (buffer == nullptr) return Refuse(column, "has an Arrow array without its offsets buffer");
  const T* o = static_cast<const T*>(buffer) + index;
  out->resize(static_cast<size_t>(n) + 1);
  for (int64_t i = 0; i <= n; ++i) {
    (*out)[static_cast<size_t>(i)] = static_cast<int64_t>(o[i]);
    if ((i == 0 && o[0] < 0) || (i > 0 && o[i] < o[i - 1])) {
      return Refuse(column, "has an Arrow array with invalid offsets");
    }
  }
  return Status::OK();
}

// Resolves `n` values of `a` from logical index `start` (a's offset not yet
// applied): appends the per-value dims of list levels to *dims and sets *leaf.
Status Resolve(const ArrowSchema& s, const ArrowArray& a, int64_t start, int64_t n,
               const std::string& column, int depth, std::vector<uint64_t>* dims, Leaf* leaf,
               std::vector<int64_t>* offsets) {
  const std::string_view f = s.format ? s.format : "";
  if (s.dictionary != nullptr || a.dictionary != nullptr) {
    return Refuse(column, "is dictionary-encoded, which cannot be fed; decode it first");
  }
  if (start < 0 || n < 0 || a.offset < 0 || start > a.length || n > a.length - start) {
    return Refuse(column, "has an Arrow array shorter than its offsets say");
  }
  const int64_t index = a.offset + start;
  const bool is_list = f == "+l" || f == "+L" || f.starts_with("+w:");
  if (!is_list && !IsLeafFormat(f)) {
    return Refuse(column, "has type " + TypeName(f) +
                              ", which cannot be fed; use numbers, strings or arrays of numbers");
  }
  const int64_t needed_buffers = is_list ? (f[1] == 'w' ? 1 : 2)
                                         : (f == "u" || f == "U" || f == "z" || f == "Z" ? 3 : 2);
  if (a.n_buffers != needed_buffers || a.buffers == nullptr) {
    return Refuse(column, "has an Arrow array with the wrong number of buffers");
  }
  if (HasNulls(a, index, n)) {
    return Refuse(column, depth == 0 ? "has nulls; fill or drop them before feeding"
                                     : "has null elements; fill or drop them before feeding");
  }
  if (!is_list) {
    leaf->format = f[0];
    leaf->array = &a;
    leaf->index = index;
    leaf->count = n;
    return Status::OK();
  }
  if (depth + 2 > static_cast<int>(kMaxBatchDims)) return Refuse(column, "nests arrays too deeply");
  if (s.n_children != 1 || a.n_children != 1 || s.children == nullptr || a.children == nullptr ||
      s.children[0] == nullptr || a.children[0] == nullptr) {
    return Refuse(column, "has an Arrow list without its values");
  }
  int64_t first = 0, width = 0;
  if (f[1] == 'w') {
    std::string_view size = f.substr(3);
    width = 0;
    for (char ch : size) {
      if (ch < '0' || ch > '9' || width > (1 << 30)) return Refuse(column, "has a bad list size");
      width = width * 10 + (ch - '0');
    }
    if (size.empty()) return Refuse(column, "has a bad list size");
    if (index > std::numeric_limits<int64_t>::max() / std::max<int64_t>(width, 1)) {
      return Refuse(column, "has an Arrow array shorter than its offsets say");
    }
    first = index * width;
  } else {
    Status st = f == "+l" ? ReadOffsets<int32_t>(a.buffers[1], index, n, column, offsets)
                          : ReadOffsets<int64_t>(a.buffers[1], index, n, column, offsets);
    RETURN_NOT_OK(st);
    first = (*offsets)[0];
    if (n > 0) {
      width = (*offsets)[1] - first;
      int64_t lo = width, hi = width;
      for (int64_t i = 1; i < n; ++i) {
        const int64_t len = (*offsets)[static_cast<size_t>(i) + 1] - (*offsets)[static_cast<size_t>(i)];
        lo = std::min(lo, len);
        hi = std::max(hi, len);
      }
      if (lo != hi) {
        return Refuse(column, "holds arrays of different lengths (" + std::to_string(lo) + ".." +
                                  std::to_string(hi) + "); feeding needs one length per column");
      }
    }
  }
  if (width > 0 && n > std::numeric_limits<int64_t>::max() / width) {
    return Refuse(column, "has an Arrow array shorter than its offsets say");
  }
  dims->push_back(static_cast<uint64_t>(width));
  return Resolve(*s.children[0], *a.children[0], first, n * width,
                 column, depth + 1, dims, leaf, offsets);
}

// The leaf's values as a column payload: a view into the Arrow buffer when
// the type is kept, else converted into *scratch.
Status Materialize(const Leaf& leaf, const std::string& column, std::string* scratch,
                   ColumnView* c, std::vector<int64_t>* offsets) {
  const ArrowArray& a = *leaf.array;
  const char f = leaf.format;
  c->type = OutputType(f);
  c->text = f == 'u' || f == 'U';
  const auto n = static_cast<size_t>(leaf.count);
  if (n == 0 && c->type != ColumnType::kBytes) {
    c->data = {};
    return Status::OK();
  }
  if (c->type != ColumnType::kBytes && a.buffers[1] == nullptr) {
    return Refuse(column, "has an Arrow array without its values buffer");
  }
  const auto* values = static_cast<const char*>(a.buffers[1]);
  const size_t in_size = LeafItemSize(f);
  if (f == 'b') {
    scratch->resize(n);
    for (size_t i = 0; i < n; ++i) {
      (*scratch)[i] = static_cast<char>(Bit(values, leaf.index + static_cast<int64_t>(i)));
    }
    c->data = *scratch;
  } else if (c->type == ColumnType::kBytes) {
    Status st = f == 'u' || f == 'z'
                    ? ReadOffsets<int32_t>(a.buffers[1], leaf.index, leaf.count, column, offsets)
                    : ReadOffsets<int64_t>(a.buffers[1], leaf.index, leaf.count, column, offsets);
    RETURN_NOT_OK(st);
    const int64_t base = (*offsets)[0];
    const auto bytes = static_cast<size_t>((*offsets)[n] - base);
    if (bytes > 0 && a.buffers[2] == nullptr) {
      return Refuse(column, "has an Arrow array without its data buffer");
    }
    scratch->resize((n + 1) * 8 + bytes);
    for (size_t i = 0; i <= n; ++i) {
      const auto o = static_cast<uint64_t>((*offsets)[i] - base);
      std::memcpy(scratch->data() + i * 8, &o, 8);
    }
    if (bytes > 0) {
      std::memcpy(scratch->data() + (n + 1) * 8, static_cast<const char*>(a.buffers[2]) + base,
                  bytes);
    }
    c->data = *scratch;
  } else if (in_size == ItemSize(c->type)) {
    c->data = std::string_view(values + static_cast<size_t>(leaf.index) * in_size, n * in_size);
  } else {  // widened integers
    const size_t out_size = ItemSize(c->type);
    scratch->resize(n * out_size);
    const char* in = values + static_cast<size_t>(leaf.index) * in_size;
    for (size_t i = 0; i < n; ++i) {
      int64_t v = 0;
      switch (f) {
        case 'c': { int8_t x; std::memcpy(&x, in + i, 1); v = x; break; }
        case 's': { int16_t x; std::memcpy(&x, in + i * 2, 2); v = x; break; }
        case 'S': { uint16_t x; std::memcpy(&x, in + i * 2, 2); v = x; break; }
        case 'I': { uint32_t x; std::memcpy(&x, in + i * 4, 4); v = x; break; }
      }
      if (out_size == 4) {
        const auto x = static_cast<int32_t>(v);
        std::memcpy(scratch->data() + i * 4, &x, 4);
      } else {
        std::memcpy(scratch->data() + i * 8, &v, 8);
      }
    }
    c->data = *scratch;
  }
  return Status::OK();
}

std::string DimsText(const std::vector<uint64_t>& dims) {
  std::string out = "[";
  for (size_t i = 1; i < dims.size(); ++i) out += (i > 1 ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

}  // namespace

Status ArrowFeeder::Slice(const ArrowSchema& schema, const ArrowArray& batch, int64_t begin,
                          int64_t rows) {
  if (schema.format == nullptr || std::string_view(schema.format) != "+s") {
    return Status::InvalidArgument("expected an Arrow record batch (a struct array)");
  }
  if (schema.n_children != batch.n_children || batch.n_buffers < 1 || batch.buffers == nullptr ||
      (batch.n_children > 0 && (schema.children == nullptr || batch.children == nullptr))) {
    return Status::InvalidArgument("the Arrow record batch does not match its schema");
  }
  if (begin < 0 || rows < 1 || begin > batch.length || rows > batch.length - begin ||
      batch.offset < 0) {
    return Status::InvalidArgument("rows out of the Arrow record batch's range");
  }
  if (HasNulls(batch, batch.offset + begin, rows)) {
    return Status::InvalidArgument("the Arrow record batch has null rows");
  }
  const auto width = static_cast<size_t>(batch.n_children);
  columns_.resize(width);
  scratch_.resize(width);
  std::vector<int64_t> offsets;
  for (size_t i = 0; i < width; ++i) {
    const ArrowSchema* s = schema.children[i];
    const ArrowArray* a = batch.children[i];
    if (s == nullptr || a == nullptr) {
      return Status::InvalidArgument("the Arrow record batch does not match its schema");
    }
    ColumnView& c = columns_[i];
    c.name = s->name ? s->name : "";
    c.dims.assign(1, static_cast<uint64_t>(rows));
    c.row_arrays = false;
    Leaf leaf;
    RETURN_NOT_OK(Resolve(*s, *a, batch.offset + begin, rows, c.name, 0, &c.dims, &leaf, &offsets));
    RETURN_NOT_OK(Materialize(leaf, c.name, &scratch_[i], &c, &offsets));
  }
  if (first_.empty()) {
    first_ = columns_;
    for (auto& c : first_) c.data = {};
    return Status::OK();
  }
  if (first_.size() != columns_.size()) {
    return Status::InvalidArgument("a record batch with " + std::to_string(columns_.size()) +
                                   " columns after one with " + std::to_string(first_.size()));
  }
  for (size_t i = 0; i < width; ++i) {
    const ColumnView& was = first_[i];
    const ColumnView& c = columns_[i];
    if (c.name != was.name || c.type != was.type) {
      return Refuse(c.name, "changed its name or type between record batches");
    }
    if (!std::equal(c.dims.begin() + 1, c.dims.end(), was.dims.begin() + 1, was.dims.end())) {
      return Refuse(c.name, "holds arrays of shape " + DimsText(c.dims) + " here and " +
                                DimsText(was.dims) +
                                " in an earlier batch; feeding needs one shape per column");
    }
  }
  return Status::OK();
}

Status ArrowFeeder::Encode(const ArrowSchema& schema, const ArrowArray& batch, int64_t begin,
                           int64_t rows, std::string* out) {
  RETURN_NOT_OK(Slice(schema, batch, begin, rows));
  return EncodeBatch(columns_, static_cast<uint64_t>(rows), out);
}

Status ArrowFeeder::Feed(const ArrowSchema& schema, const ArrowArray& batch, const PushFn& push,
                         uint64_t* pushed) {
  int64_t begin = 0;
  while (begin < batch.length) {
    const int64_t rows =
        std::min<int64_t>(static_cast<int64_t>(rows_per_batch_), batch.length - begin);
    RETURN_NOT_OK(Slice(schema, batch, begin, rows));
    RETURN_NOT_OK(EncodeBatchParts(columns_, static_cast<uint64_t>(rows), &parts_));
    size_t bytes = 0;
    for (std::string_view p : parts_.parts) bytes += p.size();
    const uint64_t per_row = std::max<uint64_t>(bytes / static_cast<uint64_t>(rows), 1);
    rows_per_batch_ = std::clamp<uint64_t>(target_bytes_ / per_row, 1, max_rows_);
    RETURN_NOT_OK(push(parts_.parts, static_cast<uint64_t>(rows)));
    *pushed += static_cast<uint64_t>(rows);
    begin += rows;
  }
  return Status::OK();
}

}  // namespace sparktf::feed
