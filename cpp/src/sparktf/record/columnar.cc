#include "sparktf/record/columnar.h"

#include <numeric>
#include <unordered_set>

namespace sparktf {

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kInt64: return "int64";
    case DType::kBytes: return "bytes";
  }
  return "?";
}

Result<DType> ParseDType(std::string_view name) {
  if (name == "float32" || name == "float") return DType::kFloat32;
  if (name == "int64") return DType::kInt64;
  if (name == "bytes" || name == "string") return DType::kBytes;
  return Status::InvalidArgument("unknown dtype '" + std::string(name) +
                                 "' (expected float32, int64 or bytes)");
}

FeatureKind KindOf(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return FeatureKind::kFloat;
    case DType::kInt64: return FeatureKind::kInt64;
    case DType::kBytes: return FeatureKind::kBytes;
  }
  return FeatureKind::kNone;
}

int64_t ColumnSpec::num_elements() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

size_t ColumnData::num_values() const {
  switch (dtype) {
    case DType::kFloat32: return floats.size();
    case DType::kInt64: return ints.size();
    case DType::kBytes: return bytes_offsets.size() - 1;
  }
  return 0;
}

Result<ColumnarDecoder> ColumnarDecoder::Make(std::vector<ColumnSpec> schema) {
  ColumnarDecoder d;
  for (size_t i = 0; i < schema.size(); ++i) {
    const ColumnSpec& s = schema[i];
    if (s.name.empty()) return Status::InvalidArgument("schema: empty feature name");
    if (!d.index_.emplace(s.name, i).second) {
      return Status::InvalidArgument("schema: feature '" + s.name + "' appears twice");
    }
    if (s.var_len) continue;
    for (int64_t dim : s.shape) {
      if (dim < 0) {
        return Status::InvalidArgument("schema: feature '" + s.name +
                                       "' has a negative dimension");
      }
    }
    if (s.has_default) {
      size_t n = s.dtype == DType::kFloat32 ? s.default_floats.size()
                 : s.dtype == DType::kInt64 ? s.default_ints.size()
                                            : s.default_bytes.size();
      if (n != 1 && static_cast<int64_t>(n) != s.num_elements()) {
        return Status::InvalidArgument(
            "schema: default of feature '" + s.name + "' has " + std::to_string(n) +
            " values; expected 1 or " + std::to_string(s.num_elements()));
      }
    }
  }
  d.schema_ = std::move(schema);
  d.columns_.resize(d.schema_.size());
  for (size_t i = 0; i < d.schema_.size(); ++i) d.columns_[i].dtype = d.schema_[i].dtype;
  d.row_marks_.resize(d.schema_.size());
  d.seen_.resize(d.schema_.size());
  return d;
}

ColumnarDecoder::Mark ColumnarDecoder::MarkOf(const ColumnData& c) const {
  return {c.floats.size(), c.ints.size(), c.bytes_data.size(), c.bytes_offsets.size()};
}

void ColumnarDecoder::Rollback(ColumnData* c, const Mark& m) const {
  c->floats.resize(m.floats);
  c->ints.resize(m.ints);
  c->bytes_data.resize(m.bytes);
  c->bytes_offsets.resize(m.bytes_offsets);
}

namespace {
void AppendBytesValue(void* ctx, std::string_view v) {
  auto* c = static_cast<ColumnData*>(ctx);
  c->bytes_data.append(v);
  c->bytes_offsets.push_back(static_cast<int64_t>(c->bytes_data.size()));
}
}  // namespace

Status ColumnarDecoder::Append(std::string_view serialized) {
  for (size_t i = 0; i < columns_.size(); ++i) {
    row_marks_[i] = MarkOf(columns_[i]);
    seen_[i] = 0;
  }
  Status st = example_internal::ForEachFeatureEntry(
      serialized, [&](std::string_view key, std::string_view value) -> Status {
        auto it = index_.find(key);
        if (it == index_.end()) return Status::OK();
        const size_t c = it->second;
        ColumnData& col = columns_[c];
        Rollback(&col, row_marks_[c]);  // a repeated key: the last one wins
        FeatureKind kind;
        example_internal::FeatureSinks sinks{&col.floats, &col.ints, &AppendBytesValue,
                                             &col};
        RETURN_NOT_OK(example_internal::DecodeFeatureInto(value, &kind, sinks));
        if (kind == FeatureKind::kNone) {
          seen_[c] = 0;
          return Status::OK();
        }
        if (kind != KindOf(schema_[c].dtype)) {
          return Status::InvalidArgument("feature '" + schema_[c].name + "' is a " +
                                         std::string(FeatureKindName(kind)) +
                                         " but the schema expects " +
                                         std::string(DTypeName(schema_[c].dtype)));
        }
        seen_[c] = 1;
        return Status::OK();
      });
  for (size_t c = 0; st.ok() && c < columns_.size(); ++c) st = FinishRow(c);
  if (!st.ok()) {
    for (size_t c = 0; c < columns_.size(); ++c) {
      Rollback(&columns_[c], row_marks_[c]);
      if (schema_[c].var_len && columns_[c].row_splits.size() > rows_ + 1) {
        columns_[c].row_splits.resize(rows_ + 1);
        columns_[c].present.resize(rows_);
      }
    }
    return st.WithContext("record " + std::to_string(rows_));
  }
  ++rows_;
  return Status::OK();
}

Status ColumnarDecoder::FinishRow(size_t c) {
  const ColumnSpec& spec = schema_[c];
  ColumnData& col = columns_[c];
  const size_t added = col.num_values() - [&] {
    const Mark& m = row_marks_[c];
    switch (spec.dtype) {
      case DType::kFloat32: return m.floats;
      case DType::kInt64: return m.ints;
      case DType::kBytes: return m.bytes_offsets - 1;
    }
    return size_t{0};
  }();
  if (spec.var_len) {
    col.row_splits.push_back(static_cast<int64_t>(col.num_values()));
    col.present.push_back(seen_[c]);
    return Status::OK();
  }
  const auto want = static_cast<size_t>(spec.num_elements());
  if (added == want && (seen_[c] || want == 0)) return Status::OK();
  if (added == 0) {
    if (!spec.has_default) {
      return Status::InvalidArgument("feature '" + spec.name +
                                     "' is required (no default) but missing");
    }
    for (size_t i = 0; i < want; ++i) {
      switch (spec.dtype) {
        case DType::kFloat32:
          col.floats.push_back(
              spec.default_floats[spec.default_floats.size() == 1 ? 0 : i]);
          break;
        case DType::kInt64:
          col.ints.push_back(spec.default_ints[spec.default_ints.size() == 1 ? 0 : i]);
          break;
        case DType::kBytes:
          AppendBytesValue(&col,
                           spec.default_bytes[spec.default_bytes.size() == 1 ? 0 : i]);
          break;
      }
    }
    return Status::OK();
  }
  return Status::InvalidArgument(
      "feature '" + spec.name + "' has " + std::to_string(added) +
      " values but the schema's fixed shape needs " + std::to_string(want));
}

std::vector<ColumnData> ColumnarDecoder::Finish() {
  std::vector<ColumnData> out = std::move(columns_);
  columns_.assign(schema_.size(), ColumnData{});
  for (size_t i = 0; i < schema_.size(); ++i) columns_[i].dtype = schema_[i].dtype;
  rows_ = 0;
  return out;
}

Status SchemaInferrer::Append(std::string_view serialized) {
  std::unordered_set<std::string_view> seen_here;
  RETURN_NOT_OK(example_internal::ForEachFeatureEntry(
                    serialized,
                    [&](std::string_view key, std::string_view value) -> Status {
                      FeatureKind kind;
                      size_t count;
                      RETURN_NOT_OK(example_internal::PeekFeature(value, &kind, &count));
                      if (kind == FeatureKind::kNone) return Status::OK();
                      FeatureStats& s = stats_[std::string(key)];
                      if (s.kind != FeatureKind::kNone && s.kind != kind &&
                          s.conflicting_kinds.empty()) {
                        s.conflicting_kinds = std::string(FeatureKindName(s.kind)) +
                                              " in one record, " +
                                              std::string(FeatureKindName(kind)) +
                                              " in record " + std::to_string(rows_);
                      }
                      s.kind = kind;
                      if (seen_here.insert(key).second) ++s.present;
                      s.min_length = std::min(s.min_length, count);
                      s.max_length = std::max(s.max_length, count);
                      return Status::OK();
                    })
                    .WithContext("record " + std::to_string(rows_)));
  ++rows_;
  return Status::OK();
}

Result<std::vector<ColumnSpec>> SchemaInferrer::Schema() const {
  std::vector<ColumnSpec> schema;
  for (const auto& [name, s] : stats_) {
    if (!s.conflicting_kinds.empty()) {
      return Status::InvalidArgument("feature '" + name +
                                     "' has different types: " + s.conflicting_kinds);
    }
    ColumnSpec spec;
    spec.name = name;
    spec.dtype = s.kind == FeatureKind::kInt64   ? DType::kInt64
                 : s.kind == FeatureKind::kBytes ? DType::kBytes
                                                 : DType::kFloat32;
    const bool fixed =
        s.present == rows_ && s.min_length == s.max_length && s.max_length > 0;
    spec.var_len = !fixed;
    if (fixed && s.max_length != 1) spec.shape = {static_cast<int64_t>(s.max_length)};
    schema.push_back(std::move(spec));
  }
  return schema;
}

}  // namespace sparktf
