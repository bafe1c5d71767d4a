// Columnar batches: the unit that feed rings carry (docs/formats/batch.md).
//
// Layout, little-endian, offsets from the batch's first byte:
//   u32 magic "STFB" | u32 num_columns | u64 num_rows
//   per column: u8 dtype | u8 ndim | u16 name_length | u32 flags |
//               u64 dims[ndim] (dims[0] == num_rows) | u64 byte_length | name bytes, padded to 8
//   zero padding to a multiple of 64, then each column's payload (byte_length bytes, padded
//   to 64), so that a batch placed at a 64-byte aligned address has every payload aligned
//   as TensorFlow's tensors need (see FeedReader and the op SparktfFeedNext).
// Payload of a fixed-width dtype is rows * prod(dims[1:]) values, row-major.
// kBytes columns carry (rows * prod(dims[1:]) + 1) u64 offsets then the data.
// flags: bit 0 (kRowArrays) says each row's value was an array (numpy), not a
// list, so that a consumer hands it back as the row held it; only with ndim >= 2.
// Bit 1 (kText): every value of a kBytes column was text (a Python str, UTF-8).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sparktf/common/result.h"

namespace sparktf::feed {

constexpr uint32_t kBatchMagic = 0x42465453;  // "STFB"
constexpr size_t kMaxBatchColumns = 4096;
constexpr size_t kMaxBatchDims = 8;
constexpr uint32_t kRowArrays = 1;  // column flags (see the layout)
constexpr uint32_t kText = 2;
constexpr size_t kPayloadAlign = 64;  // payload offsets and lengths are padded to this

enum class ColumnType : uint8_t {
  kFloat32 = 0, kFloat64 = 1, kInt32 = 2, kInt64 = 3, kUInt8 = 4, kBool = 5, kBytes = 6,
};
size_t ItemSize(ColumnType type);  // 0 for kBytes
std::string_view ColumnTypeName(ColumnType type);

// A column view into a batch buffer (or into caller memory when encoding).
struct ColumnView {
  std::string name;
  ColumnType type = ColumnType::kFloat32;
  std::vector<uint64_t> dims;  // dims[0] = rows
  std::string_view data;       // payload bytes as laid out above
  bool row_arrays = false;     // flag kRowArrays
  bool text = false;           // flag kText
};

// Number of values of a column: product of dims (0 if no dims).
uint64_t NumValues(const std::vector<uint64_t>& dims);

// Serializes columns that all have dims[0] == num_rows. InvalidArgument when
// shapes and byte lengths disagree.
Status EncodeBatch(const std::vector<ColumnView>& columns, uint64_t num_rows, std::string* out);
// Writes only the header of a batch whose column payloads will have the given
// byte lengths (the caller appends each payload padded to kPayloadAlign, in order). The
// header starts at out->size(), and alignment is counted from there.
// `columns` supply names, types and dims; their data is not read.
Status EncodeBatchHeader(const std::vector<ColumnView>& columns, uint64_t num_rows,
                         const std::vector<uint64_t>& payload_sizes, std::string* out);
// EncodeBatch's output as byte ranges to concatenate, without copying the
// payloads: `header`, then each column's data and padding. The ranges point
// into `header` (so a BatchParts stays where it was filled) and into the
// columns' data, which must outlive them.
struct BatchParts {
  BatchParts() = default;
  BatchParts(const BatchParts&) = delete;
  BatchParts& operator=(const BatchParts&) = delete;
  std::string header;
  std::vector<std::string_view> parts;
};
Status EncodeBatchParts(const std::vector<ColumnView>& columns, uint64_t num_rows,
                        BatchParts* out);
// Size EncodeBatch would produce.
size_t EncodedBatchSize(const std::vector<ColumnView>& columns);

// Parses a batch; views point into `data`, which must outlive them. Every
// length and count is checked against the buffer before use, unknown flags
// and padding must be zero, so that a valid batch has one encoding:
// malformed input is InvalidArgument, never an out-of-bounds read.
Status DecodeBatch(std::string_view data, uint64_t* num_rows, std::vector<ColumnView>* columns);

}  // namespace sparktf::feed
