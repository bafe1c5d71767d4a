// Columnar decoding: many serialized tf.train.Examples plus a schema ->
// contiguous per-feature arrays, with no per-record allocation.
//
// Fixed-length columns yield num_rows * prod(shape) values. Variable-length
// columns yield the values of all rows concatenated plus row_splits
// (num_rows + 1 offsets) and a presence flag per row (a feature that is absent
// and one that is an empty list both have length 0; `present` tells them
// apart). Bytes values are one buffer plus offsets.
//
// Semantics follow tf.io.parse_example: a fixed-length feature that is absent
// (or an empty list) takes the column's default or is an error; a feature of
// another kind than the schema says is an error; features not in the schema
// are ignored. Errors are InvalidArgument naming the row and the feature, and
// leave the decoder as it was before the failing Append.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sparktf/common/result.h"
#include "sparktf/record/example.h"

namespace sparktf {

enum class DType : uint8_t { kFloat32 = 0, kInt64 = 1, kBytes = 2 };
std::string_view DTypeName(DType dtype);  // "float32", "int64", "bytes"
Result<DType> ParseDType(std::string_view name);
FeatureKind KindOf(DType dtype);

struct ColumnSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  bool var_len = false;
  std::vector<int64_t> shape;  // fixed-length only; empty = scalar
  // Fixed-length only: used when the feature is absent. Either one value
  // (broadcast) or prod(shape) values; absent = the feature is required.
  bool has_default = false;
  std::vector<float> default_floats;
  std::vector<int64_t> default_ints;
  std::vector<std::string> default_bytes;

  int64_t num_elements() const;  // prod(shape) for fixed-length columns
};

struct ColumnData {
  DType dtype = DType::kFloat32;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  std::string bytes_data;
  std::vector<int64_t> bytes_offsets{0};  // one more than the number of values
  std::vector<int64_t> row_splits{0};     // var_len only
  std::vector<uint8_t> present;           // var_len only

  size_t num_values() const;
};

class ColumnarDecoder {
 public:
  // Checks the schema: unique non-empty names, non-negative dims, default sizes.
  static Result<ColumnarDecoder> Make(std::vector<ColumnSpec> schema);

  Status Append(std::string_view serialized_example);
  size_t num_rows() const { return rows_; }
  const std::vector<ColumnSpec>& schema() const { return schema_; }
  // Moves the columns out (in schema order) and starts over.
  std::vector<ColumnData> Finish();

 private:
  ColumnarDecoder() = default;
  struct Mark {
    size_t floats, ints, bytes, bytes_offsets;
  };
  Mark MarkOf(const ColumnData& c) const;
  void Rollback(ColumnData* c, const Mark& m) const;
  Status FinishRow(size_t column);

  std::vector<ColumnSpec> schema_;
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> index_;
  std::vector<ColumnData> columns_;
  std::vector<Mark> row_marks_;
  std::vector<uint8_t> seen_;
  size_t rows_ = 0;
};

// What a scan of records saw of one feature.
struct FeatureStats {
  FeatureKind kind = FeatureKind::kNone;
  std::string conflicting_kinds;  // non-empty if records disagree
  size_t present = 0;             // records that have it with a kind set
  size_t min_length = SIZE_MAX;
  size_t max_length = 0;
};

// Gathers FeatureStats over records and turns them into a schema: a feature
// present in every record with one constant length L is fixed-length (shape
// () for L == 1, (L,) otherwise); anything else is variable-length.
class SchemaInferrer {
 public:
  Status Append(std::string_view serialized_example);
  size_t num_rows() const { return rows_; }
  const std::map<std::string, FeatureStats>& stats() const { return stats_; }
  // InvalidArgument when a feature has different kinds in different records.
  Result<std::vector<ColumnSpec>> Schema() const;

 private:
  std::map<std::string, FeatureStats> stats_;
  size_t rows_ = 0;
};

}  // namespace sparktf
