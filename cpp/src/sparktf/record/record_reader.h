// TFRecord reading (format: docs/formats/tfrecord.md).
//
// Errors follow TensorFlow's reader: a clean end of file (no bytes left at a
// record boundary) is OutOfRange and ends iteration; a truncated record, a bad
// length CRC or a bad data CRC is DataLoss naming the file and the byte offset
// of the record. A failed read does not advance the reader, so calling again
// reports the same error. With skip_corrupt, the reader instead resynchronises
// on the next position where a whole record checks out, and counts what it
// skipped.
//
// Offsets are positions in the (decompressed) record stream. Not thread-safe.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "sparktf/common/io.h"
#include "sparktf/record/compression.h"

namespace sparktf {

// Bytes before and after a record's data: u64 length, masked CRC of the length;
// then the data, then the masked CRC of the data.
constexpr size_t kRecordHeaderSize = 12;
constexpr size_t kRecordFooterSize = 4;
constexpr size_t kDefaultReadBufferSize = 1 << 20;

struct RecordReaderOptions {
  Compression compression = Compression::kNone;
  bool skip_corrupt = false;
  bool verify_data_crc = true;
  // Start reading at this offset, which must be a record boundary (from an
  // index). Compressed streams get there by decompressing and discarding.
  uint64_t start_offset = 0;
  // Stop (OutOfRange) before a record that starts at or after this offset.
  uint64_t end_offset = std::numeric_limits<uint64_t>::max();
  size_t buffer_size = kDefaultReadBufferSize;
};

struct RecordReaderStats {
  uint64_t records = 0;          // records returned
  uint64_t skipped_bytes = 0;    // skip_corrupt: bytes passed over
  uint64_t corrupt_regions = 0;  // skip_corrupt: places where data was bad
};

class RecordReader {
 public:
  static Result<std::unique_ptr<RecordReader>> Open(
      const std::string& path, const RecordReaderOptions& options = {});
  // Reads from an already open (raw, still compressed) stream.
  static Result<std::unique_ptr<RecordReader>> Make(
      std::unique_ptr<InputStream> raw, const RecordReaderOptions& options = {});
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // On OK, *record views the record's bytes, valid until the next call.
  // OutOfRange at the end; DataLoss or IOError otherwise.
  Status ReadRecord(std::string_view* record);

  // Offset of the next record (or of the record that failed).
  uint64_t offset() const { return pos_; }
  const RecordReaderStats& stats() const { return stats_; }
  const std::string& name() const { return in_->name(); }

 private:
  RecordReader(std::unique_ptr<InputStream> in, const RecordReaderOptions& options);
  // Makes at least n bytes available at buf_[begin_], fewer only at end of
  // stream. Grows the buffer only as data arrives, so a huge declared length
  // never allocates more than the stream holds.
  Result<size_t> Fill(size_t n);
  Status Skip(uint64_t n);
  Status Corrupt(std::string what) const;

  std::unique_ptr<InputStream> in_;
  RecordReaderOptions options_;
  std::vector<char> buf_;
  size_t begin_ = 0;
  size_t end_ = 0;
  bool eof_ = false;
  uint64_t pos_ = 0;          // stream offset of buf_[begin_]
  int64_t stream_size_ = -1;  // known for uncompressed files
  bool resyncing_ = false;
  RecordReaderStats stats_;
};

// Offsets of every record start in a file, for splitting one file among
// several readers (each reading [index[i], index[j]) ). Checks framing CRCs
// only (not data CRCs).
Result<std::vector<uint64_t>> BuildRecordIndex(const std::string& path,
                                               Compression compression);

}  // namespace sparktf
