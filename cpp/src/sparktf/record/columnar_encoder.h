// Columnar encoding: contiguous per-column arrays (e.g. an Arrow record batch
// seen through numpy) -> one serialized tf.train.Example per row. The mirror of
// ColumnarDecoder, for writing DataFrames without a per-row Python loop.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "sparktf/common/status.h"
#include "sparktf/record/example.h"

namespace sparktf {

// A column over caller-owned buffers, which must outlive EncodeColumns.
// Values of row r are values [row_offsets[r], row_offsets[r+1]) when
// row_offsets is set (list columns), else value r alone (scalar columns).
struct InputColumn {
  std::string name;
  FeatureKind kind = FeatureKind::kFloat;  // kFloat, kInt64 or kBytes
  const float* floats = nullptr;           // kFloat
  const int64_t* ints = nullptr;           // kInt64
  const char* bytes_data = nullptr;        // kBytes: value i is
  const int64_t* bytes_offsets = nullptr;  //   bytes_data[off[i], off[i+1])
  size_t num_values = 0;
  const int64_t* row_offsets = nullptr;  // num_rows + 1 entries, or null
  const uint8_t* valid = nullptr;        // 0 = null: feature left out; null = all valid
};

// Calls sink(serialized) for rows [0, num_rows) in order. Checks that offsets
// stay within num_values and never decrease; violations are InvalidArgument
// naming the column and row.
Status EncodeColumns(const std::vector<InputColumn>& columns, size_t num_rows,
                     const std::function<Status(std::string_view)>& sink);

}  // namespace sparktf
