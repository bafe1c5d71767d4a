#include "sparktf/feed/row_batcher.h"

#include <cstring>

namespace sparktf::feed {

void ColumnBuilder::PutFloat32(float v) {
  data_.append(reinterpret_cast<const char*>(&v), 4);
}

void ColumnBuilder::PutInt64(int64_t v) {
  data_.append(reinterpret_cast<const char*>(&v), 8);
}

char* ColumnBuilder::Extend(size_t values) {
  const size_t at = data_.size();
  data_.resize(at + values * ItemSize(sig_.type));
  return data_.data() + at;
}

Status ColumnBuilder::Error(std::string_view what) const {
  return Status::InvalidArgument("row " + std::to_string(rows_) + ", column '" + name_ +
                                 "': " + std::string(what));
}

Status ColumnBuilder::PutArray(ColumnType type, std::span<const uint64_t> shape,
                               std::string_view bytes) {
  if (sig_.shape != ColumnShape::kArray || type != sig_.type ||
      !std::equal(shape.begin(), shape.end(), sig_.inner.begin(), sig_.inner.end())) {
    return Error("array shape or dtype differs from the first row's");
  }
  if (bytes.size() != NumValues(sig_.inner) * ItemSize(type)) {
    return Error("array holds " + std::to_string(bytes.size()) + " bytes, not its shape's");
  }
  data_.append(bytes);
  return Status::OK();
}

Status ColumnBuilder::CheckSequence(uint64_t n) const {
  if (sig_.shape != ColumnShape::kSequence) return Error("expected a value like the first row's");
  if (n != sig_.inner[0]) {
    return Error("has " + std::to_string(n) + " values but the first row had " +
                 std::to_string(sig_.inner[0]));
  }
  return Status::OK();
}

std::optional<ColumnSignature> ColumnBuilder::SignatureOf(const PickledRows& r,
                                                          const PickleValue& v) {
  using K = PickleValue::Kind;
  switch (v.kind) {
    case K::kFloat: return ColumnSignature{ColumnShape::kScalar, ColumnType::kFloat32, {}};
    case K::kInt: return ColumnSignature{ColumnShape::kScalar, ColumnType::kInt64, {}};
    case K::kBool: return ColumnSignature{ColumnShape::kScalar, ColumnType::kBool, {}};
    case K::kStr:
    case K::kBytes: return ColumnSignature{ColumnShape::kScalar, ColumnType::kBytes, {}};
    case K::kList:
    case K::kTuple: {
      const auto items = r.Items(v);
      if (items.empty()) return std::nullopt;
      const K k = items[0].kind;
      if (k != K::kFloat && k != K::kInt && k != K::kBool) return std::nullopt;
      for (const PickleValue& item : items) {
        if (item.kind != k) return std::nullopt;
      }
      const ColumnType t = k == K::kFloat ? ColumnType::kFloat32
                           : k == K::kInt ? ColumnType::kInt64
                                          : ColumnType::kBool;
      return ColumnSignature{ColumnShape::kSequence, t, {static_cast<uint64_t>(items.size())}};
    }
    case K::kArray: {
      const PickledArray& a = r.Array(v);
      if (a.shape.empty()) return std::nullopt;  // a 0-d array is a scalar in Python
      return ColumnSignature{ColumnShape::kArray, a.type, a.shape};
    }
    default: return std::nullopt;
  }
}

void ColumnBuilder::AppendParsed(const PickledRows& r, const PickleValue& v) {
  switch (sig_.shape) {
    case ColumnShape::kScalar:
      if (sig_.type == ColumnType::kBytes) {
        PutText(r.Text(v), v.kind == PickleValue::Kind::kStr);
        break;
      }
      [[fallthrough]];
    case ColumnShape::kSequence: {
      const std::span<const PickleValue> values =
          sig_.shape == ColumnShape::kScalar ? std::span<const PickleValue>(&v, 1) : r.Items(v);
      char* out = Extend(values.size());
      switch (sig_.type) {
        case ColumnType::kFloat32:
          for (const PickleValue& x : values) {
            const float f = static_cast<float>(x.f);
            std::memcpy(out, &f, 4);
            out += 4;
          }
          break;
        case ColumnType::kInt64:
          for (const PickleValue& x : values) {
            std::memcpy(out, &x.i, 8);
            out += 8;
          }
          break;
        case ColumnType::kBool:
          for (const PickleValue& x : values) *out++ = x.i ? 1 : 0;
          break;
        default: break;  // never: SignatureOf gives only these for numbers
      }
      break;
    }
    case ColumnShape::kArray:
      data_.append(r.Array(v).data);
      break;
  }
  ++rows_;
}

void ColumnBuilder::Clear() {
  rows_ = 0;
  sig_ = ColumnSignature{};
  data_.clear();
  offsets_.resize(1);
  payload_.clear();
  all_str_ = false;
}

ColumnView ColumnBuilder::View() {
  ColumnView c;
  c.name = name_;
  c.type = sig_.type;
  c.dims = {rows_};
  c.dims.insert(c.dims.end(), sig_.inner.begin(), sig_.inner.end());
  c.row_arrays = sig_.shape == ColumnShape::kArray;
  c.text = sig_.type == ColumnType::kBytes && rows_ > 0 && all_str_;
  if (sig_.type == ColumnType::kBytes) {
    payload_.assign(reinterpret_cast<const char*>(offsets_.data()), offsets_.size() * 8);
    payload_ += data_;
    c.data = payload_;
  } else {
    c.data = data_;
  }
  return c;
}

Status RowBatcher::StartBatch(bool tuple_rows, size_t width,
                              std::optional<std::vector<std::string>> fields) {
  std::vector<std::string> names;
  if (names_) {
    names = *names_;
  } else if (fields) {
    names = std::move(*fields);
  } else {
    for (size_t i = 0; i < width; ++i) names.push_back(std::to_string(i));
  }
  if (names.size() != width) {
    return Status::InvalidArgument(std::to_string(names.size()) + " names for rows of " +
                                   std::to_string(width) + " values");
  }
  if (width == 0) return Status::InvalidArgument("rows of no values");
  tuple_rows_ = tuple_rows;
  // Batches tend to be alike: the columns of the last one keep their memory
  // rather than growing (and copying) their payloads step by step.
  bool same = builders_.size() == names.size();
  for (size_t k = 0; same && k < builders_.size(); ++k) same = builders_[k].name() == names[k];
  if (!same) {
    builders_.clear();
    for (auto& name : names) builders_.emplace_back(std::move(name));
  }
  return Status::OK();
}

int64_t RowBatcher::AppendPickled(std::string_view pickle) {
  using K = PickleValue::Kind;
  if (!pickled_.Parse(pickle).ok()) return -1;
  const size_t n = pickled_.rows();
  if (n == 0) return 0;
  const PickleValue& first = pickled_.row(0);
  const bool tuple_rows = first.kind == K::kTuple || first.kind == K::kList;
  const size_t width = tuple_rows ? pickled_.Items(first).size() : 1;
  if (width == 0 || (rows_ > 0 && (tuple_rows != tuple_rows_ || width != builders_.size()))) {
    return -1;
  }
  if (rows_ == 0 && names_ && names_->size() != width) return -1;
  const auto values_of = [&](const PickleValue& row) {
    return tuple_rows ? pickled_.Items(row) : std::span<const PickleValue>(&row, 1);
  };
  // Every row is checked before any is appended.
  signatures_.clear();
  for (size_t i = 0; i < n; ++i) {
    const PickleValue& row = pickled_.row(i);
    if (tuple_rows && row.kind != K::kTuple && row.kind != K::kList) return -1;
    const std::span<const PickleValue> values = values_of(row);
    if (values.size() != width) return -1;
    for (size_t c = 0; c < width; ++c) {
      std::optional<ColumnSignature> s = ColumnBuilder::SignatureOf(pickled_, values[c]);
      if (!s) return -1;
      if (i == 0) {
        if (rows_ > 0 && !builders_[c].Accepts(*s)) return -1;
        signatures_.push_back(std::move(*s));
      } else if (!(*s == signatures_[c])) {
        return -1;
      }
    }
  }
  if (rows_ == 0) {
    if (!StartBatch(tuple_rows, width).ok()) return -1;
    for (size_t c = 0; c < width; ++c) builders_[c].Start(signatures_[c]);
  }
  for (size_t i = 0; i < n; ++i) {
    const std::span<const PickleValue> values = values_of(pickled_.row(i));
    for (size_t c = 0; c < width; ++c) builders_[c].AppendParsed(pickled_, values[c]);
  }
  rows_ += n;
  return static_cast<int64_t>(n);
}

size_t RowBatcher::nbytes() const {
  size_t n = 0;
  for (const auto& b : builders_) n += b.nbytes();
  return n;
}

Status RowBatcher::Encode(BatchParts* out) {
  if (rows_ == 0) return Status::InvalidArgument("no rows");
  std::vector<ColumnView> views;
  views.reserve(builders_.size());
  for (auto& b : builders_) views.push_back(b.View());
  return EncodeBatchParts(views, rows_, out);
}

void RowBatcher::Clear() {
  for (auto& b : builders_) b.Clear();
  rows_ = 0;
}

Result<std::string> RowBatcher::Take() {
  BatchParts parts;
  if (Status st = Encode(&parts); !st.ok()) return st;
  std::string out;
  for (std::string_view p : parts.parts) out.append(p);
  Clear();
  return out;
}

}  // namespace sparktf::feed
