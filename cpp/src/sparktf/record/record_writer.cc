#include "sparktf/record/record_writer.h"

#include <cstring>

#include "sparktf/fs/file_system.h"
#include "sparktf/record/crc32c.h"
#include "sparktf/record/record_reader.h"

namespace sparktf {

namespace {

struct Frame {
  char header[kRecordHeaderSize];
  char footer[kRecordFooterSize];
};

Frame MakeFrame(std::string_view record) {
  Frame f;
  const uint64_t length = record.size();
  std::memcpy(f.header, &length, 8);
  const uint32_t length_crc = crc32c::Mask(crc32c::Value(f.header, 8));
  std::memcpy(f.header + 8, &length_crc, 4);
  const uint32_t data_crc = crc32c::Mask(crc32c::Value(record.data(), record.size()));
  std::memcpy(f.footer, &data_crc, 4);
  return f;
}

}  // namespace

void AppendFramedRecord(std::string_view record, std::string* out) {
  const Frame f = MakeFrame(record);
  out->append(f.header, kRecordHeaderSize);
  out->append(record);
  out->append(f.footer, kRecordFooterSize);
}

RecordWriter::RecordWriter(std::unique_ptr<OutputStream> out, size_t buffer_size)
    : out_(std::move(out)), buffer_size_(buffer_size) {
  buf_.reserve(buffer_size_ + 64);
}

Result<std::unique_ptr<RecordWriter>> RecordWriter::Open(
    const std::string& path, const RecordWriterOptions& options) {
  ASSIGN_OR_RETURN(auto file, OpenOutputFile(path));
  return Make(std::move(file), options);
}

Result<std::unique_ptr<RecordWriter>> RecordWriter::Make(
    std::unique_ptr<OutputStream> raw, const RecordWriterOptions& options) {
  ASSIGN_OR_RETURN(auto out, MakeDeflateStream(std::move(raw), options.compression,
                                               options.compression_level));
  return std::unique_ptr<RecordWriter>(
      new RecordWriter(std::move(out), options.buffer_size));
}

Status RecordWriter::Write(std::string_view record) {
  if (closed_)
    return Status::InvalidArgument("write " + out_->name() + ": writer is closed");
  if (record.size() >= buffer_size_) {
    // Large records go straight through rather than through the buffer.
    RETURN_NOT_OK(Drain());
    const Frame f = MakeFrame(record);
    RETURN_NOT_OK(out_->Write({f.header, kRecordHeaderSize}));
    RETURN_NOT_OK(out_->Write(record));
    RETURN_NOT_OK(out_->Write({f.footer, kRecordFooterSize}));
  } else {
    AppendFramedRecord(record, &buf_);
    if (buf_.size() >= buffer_size_) RETURN_NOT_OK(Drain());
  }
  ++records_;
  return Status::OK();
}

Status RecordWriter::Drain() {
  if (buf_.empty()) return Status::OK();
  Status st = out_->Write(buf_);
  buf_.clear();
  return st;
}

Status RecordWriter::Flush() {
  if (closed_) return Status::OK();
  RETURN_NOT_OK(Drain());
  return out_->Flush();
}

Status RecordWriter::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  Status st = Drain();
  Status close_st = out_->Close();
  return st.ok() ? close_st : st;
}

}  // namespace sparktf
