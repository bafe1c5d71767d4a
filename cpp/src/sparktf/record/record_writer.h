// TFRecord writing (format: docs/formats/tfrecord.md). Output is what
// tf.io.TFRecordWriter writes for the same records and compression (compressed
// bytes may differ; the decompressed stream is identical).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sparktf/common/io.h"
#include "sparktf/record/compression.h"

namespace sparktf {

struct RecordWriterOptions {
  Compression compression = Compression::kNone;
  int compression_level = -1;  // zlib 0..9, -1 = zlib's default
  size_t buffer_size = 1 << 20;
};

// Not thread-safe. Close() commits the file: until then nothing is visible at its path
// (see WritableFile). Destroying a writer without Close() discards what was written.
class RecordWriter {
 public:
  static Result<std::unique_ptr<RecordWriter>> Open(
      const std::string& path, const RecordWriterOptions& options = {});
  static Result<std::unique_ptr<RecordWriter>> Make(
      std::unique_ptr<OutputStream> raw, const RecordWriterOptions& options = {});
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  Status Write(std::string_view record);
  // Pushes everything buffered so far to the stream below (for files, to the store;
  // readers see it only after Close()).
  Status Flush();
  Status Close();
  uint64_t records_written() const { return records_; }

 private:
  RecordWriter(std::unique_ptr<OutputStream> out, size_t buffer_size);
  Status Drain();

  std::unique_ptr<OutputStream> out_;
  std::string buf_;
  size_t buffer_size_;
  uint64_t records_ = 0;
  bool closed_ = false;
};

// Appends one framed record (header, data, footer) to *out.
void AppendFramedRecord(std::string_view record, std::string* out);

}  // namespace sparktf
