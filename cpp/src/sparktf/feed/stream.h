// What travels through a feed ring (docs/formats/feed.md): columnar batches
// ("STFB", batch.h), training batches tagged with where their rows come from
// ("STFT" + a batch), and partition markers ("STFM" + JSON) that bracket the
// rows of one inference partition, so results can be matched to inputs.
//
// BatchAssembler buffers decoded batches and re-cuts them into batches of the
// size the consumer asks for, without going through Python per row and, for
// rows that lie in one batch, without copying them.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sparktf/common/result.h"
#include "sparktf/feed/batch.h"
#include "sparktf/feed/buffer_pool.h"

namespace sparktf::feed {

constexpr uint32_t kMarkerMagic = 0x4d465453;  // bytes "STFM"

struct Marker {
  enum Kind { kBegin, kEnd, kAbort };  // kAbort: the producer gave up on the partition
  Kind kind = kBegin;
  int64_t partition = 0;
  std::string result_ring;  // kBegin: where this partition's results go
  uint64_t rows = 0;        // kEnd: rows the partition had
};

std::string EncodeMarker(const Marker& marker);
bool IsMarker(std::string_view message);
Result<Marker> DecodeMarker(std::string_view message);

constexpr uint32_t kTagMagic = 0x54465453;  // bytes "STFT"
constexpr size_t kTagSize = 32;

// Where a training batch's rows come from: rows [first_row, first_row + rows)
// of partition `partition` of feeding job `feed` (an id TFCluster draws per
// feeding job). Every attempt of a feeding task pushes its partition from row
// 0, in order, so the consumer can drop the rows an earlier attempt delivered.
struct BatchTag {
  uint64_t feed = 0;
  int64_t partition = 0;
  uint64_t first_row = 0;
};

// "u32 magic | u32 0 | u64 feed | i64 partition | u64 first_row"; the batch follows.
std::string EncodeTag(const BatchTag& tag);
bool IsTagged(std::string_view message);
// The tag of a tagged message (InvalidArgument if short or the reserved field is not 0).
Result<BatchTag> DecodeTag(std::string_view message);

// The reason a consumer gives when it stops reading on purpose (terminate(),
// or its function returned): producers then skip the rest of their data
// (Cancelled) instead of failing (Aborted).
constexpr std::string_view kConsumerDoneReason = "the consumer stopped reading the feed";
// Maps a ring's Aborted status: Cancelled when the consumer stopped on purpose.
Status ClassifyConsumerStop(Status st);

// Rows [first_row, first_row + rows) of one decoded batch that `owner` keeps
// alive (a buffer, or a message held in its ring): what the consumer hands out
// without copying rows. The columns are those of the whole batch (dims[0] its
// row count, data views into what owner keeps).
struct BatchSlice {
  std::shared_ptr<const void> owner;
  std::vector<ColumnView> columns;
  uint64_t first_row = 0;
  uint64_t rows = 0;
};

// A fixed-size column's payload for the slice's rows (a view; not for kBytes).
std::string_view SliceValues(const BatchSlice& slice, size_t column);
// The slice's rows as one encoded batch (a copy), into *out.
Status EncodeSlice(const BatchSlice& slice, std::string* out);

// Rows of several batches, handed out in batches of any size. All batches must
// have the same columns (names, dtypes, per-row shapes).
class BatchAssembler {
 public:
  // Adds one encoded batch that starts `skip_bytes` into `message`, without its
  // first `skip_rows` rows. InvalidArgument if it is malformed or its columns
  // differ from the first batch's, or it has fewer than `skip_rows` rows.
  Status Add(std::shared_ptr<const std::string> message, size_t skip_bytes = 0,
             uint64_t skip_rows = 0);
  Status Add(std::string message, size_t skip_bytes = 0, uint64_t skip_rows = 0) {
    return Add(std::make_shared<const std::string>(std::move(message)), skip_bytes, skip_rows);
  }
  // The same for a batch `message` that `owner` keeps valid.
  Status Add(std::shared_ptr<const void> owner, std::string_view message, uint64_t skip_rows);
  uint64_t rows() const { return rows_; }
  // Takes min(n, rows()) rows (n > 0): a view of the oldest batch when they
  // all lie in it; otherwise copied once, into a buffer of `pool` (if given).
  Status TakeSlice(uint64_t n, BatchSlice* out, BufferPool* pool = nullptr);
  // Takes min(n, rows()) rows as one encoded batch (a copy).
  Status Take(uint64_t n, std::string* out);
  // Drops every buffered row; returns how many there were.
  uint64_t Clear();
  // Columns of the first batch ever added (data views empty), for a schema.
  const std::vector<ColumnView>& schema() const { return schema_; }

 private:
  struct Chunk {
    std::shared_ptr<const void> data;
    uint64_t rows = 0;
    uint64_t offset = 0;  // rows already taken
    std::vector<ColumnView> columns;
  };
  // Drops n rows from the front (they were handed out).
  void Advance(uint64_t n);
  std::deque<Chunk> chunks_;
  uint64_t rows_ = 0;
  std::vector<ColumnView> schema_;
};

// Where a feed message's batch starts (after the tag of a tagged batch): the
// byte that rings place at a 64-byte aligned address.
size_t BatchStart(std::string_view message);

// Rows in an encoded batch (its header only; InvalidArgument if too short).
Result<uint64_t> BatchRows(std::string_view message);

}  // namespace sparktf::feed
