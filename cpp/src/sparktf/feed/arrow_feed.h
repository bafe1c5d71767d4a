// Arrow record batches -> columnar feed batches (docs/formats/feed.md), read
// through the Arrow C data interface, as a DataFrame's feeding task gets them
// from Spark (mapInArrow): no Python object per batch or value, and the
// numbers go from Arrow's buffers into the ring with one copy.
//
// A record batch is a struct array (format "+s") whose children are the
// columns. Column types and what they become:
//   f float32, g float64, i int32, l int64, C uint8: as they are (no copy);
//   c int8, s int16 -> int32; b bool -> bool (bits unpacked);
//   u, U (utf8) -> bytes marked text; z, Z (binary) -> bytes;
//   +l, +L (list), +w:N (fixed-size list) of any of these, nested too ->
//   one more per-row dimension, the same length in every row of the column.
// Any null (a value, or an element of an array) is InvalidArgument naming the
// column: fill or drop nulls before feeding. Other types (decimal, date,
// timestamp, map, struct, ...) are InvalidArgument naming the column and type.
// Every offset is checked against the lengths the arrays declare.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sparktf/common/result.h"
#include "sparktf/feed/batch.h"
#include "sparktf/feed/ring.h"

#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE
// The Arrow C data interface's ABI (arrow.apache.org/docs/format/CDataInterface.html).
extern "C" {
struct ArrowSchema {
  const char* format;
  const char* name;
  const char* metadata;
  int64_t flags;
  int64_t n_children;
  struct ArrowSchema** children;
  struct ArrowSchema* dictionary;
  void (*release)(struct ArrowSchema*);
  void* private_data;
};
struct ArrowArray {
  int64_t length;
  int64_t null_count;
  int64_t offset;
  int64_t n_buffers;
  int64_t n_children;
  const void** buffers;
  struct ArrowArray** children;
  struct ArrowArray* dictionary;
  void (*release)(struct ArrowArray*);
  void* private_data;
};
}
#endif

namespace sparktf::feed {

class ArrowFeeder {
 public:
  // Pushes one encoded batch of `rows` rows; a non-OK status stops Feed.
  using PushFn = std::function<Status(MessageParts batch, uint64_t rows)>;

  // target_bytes: the size feed batches are cut to (the first batch of a
  // feeder has first_rows rows and sizes the rest); max_rows caps a batch.
  explicit ArrowFeeder(size_t target_bytes = 1 << 20, uint64_t first_rows = 256,
                       uint64_t max_rows = 1 << 16)
      : target_bytes_(target_bytes), max_rows_(max_rows), rows_per_batch_(first_rows) {}

  // Pushes every row of `batch` as feed batches of about target_bytes; adds
  // the rows pushed to *pushed. A column's per-row shape must stay that of
  // the feeder's first batch. Returns the first error (of the input or of
  // `push`, e.g. Cancelled when the consumer stopped reading).
  Status Feed(const ArrowSchema& schema, const ArrowArray& batch, const PushFn& push,
              uint64_t* pushed);

  // Rows [begin, begin + rows) of `batch` as one encoded feed batch, appended
  // to *out.
  Status Encode(const ArrowSchema& schema, const ArrowArray& batch, int64_t begin, int64_t rows,
                std::string* out);

 private:
  // Fills columns_ (views into the batch or into scratch_) for the rows.
  Status Slice(const ArrowSchema& schema, const ArrowArray& batch, int64_t begin, int64_t rows);

  size_t target_bytes_;
  uint64_t max_rows_;
  uint64_t rows_per_batch_;
  std::vector<ColumnView> columns_;
  std::vector<std::string> scratch_;  // per column, reused between slices
  std::vector<ColumnView> first_;     // the first batch's columns (names, types, dims)
  BatchParts parts_;
};

}  // namespace sparktf::feed
