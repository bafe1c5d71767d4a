#include "sparktf/record/record_reader.h"

#include <algorithm>
#include <cstring>

#include "sparktf/fs/file_system.h"
#include "sparktf/record/crc32c.h"

namespace sparktf {
namespace {

uint64_t DecodeFixed64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
uint32_t DecodeFixed32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

RecordReader::RecordReader(std::unique_ptr<InputStream> in,
                           const RecordReaderOptions& options)
    : in_(std::move(in)), options_(options) {
  buf_.resize(std::max<size_t>(options_.buffer_size, 64));
  stream_size_ = in_->Size();
}

Result<std::unique_ptr<RecordReader>> RecordReader::Open(
    const std::string& path, const RecordReaderOptions& options) {
  ASSIGN_OR_RETURN(auto file, OpenInputFile(path));
  return Make(std::move(file), options);
}

Result<std::unique_ptr<RecordReader>> RecordReader::Make(
    std::unique_ptr<InputStream> raw, const RecordReaderOptions& options) {
  if (options.start_offset > options.end_offset) {
    return Status::InvalidArgument(
        "start_offset " + std::to_string(options.start_offset) + " is past end_offset " +
        std::to_string(options.end_offset));
  }
  auto in = MakeInflateStream(std::move(raw), options.compression);
  std::unique_ptr<RecordReader> reader(new RecordReader(std::move(in), options));
  if (options.start_offset > 0) {
    if (reader->stream_size_ >= 0) {
      if (options.start_offset > static_cast<uint64_t>(reader->stream_size_)) {
        return Status::InvalidArgument("start_offset " +
                                       std::to_string(options.start_offset) +
                                       " is past the end of " + reader->name() + " (" +
                                       std::to_string(reader->stream_size_) + " bytes)");
      }
      RETURN_NOT_OK(reader->in_->Seek(options.start_offset));
      reader->pos_ = options.start_offset;
    } else {
      RETURN_NOT_OK(reader->Skip(options.start_offset));
    }
  }
  return reader;
}

Result<size_t> RecordReader::Fill(size_t n) {
  while (end_ - begin_ < n && !eof_) {
    if (end_ == buf_.size()) {
      if (begin_ > 0) {
        std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
        end_ -= begin_;
        begin_ = 0;
      } else {
        buf_.resize(std::min(buf_.size() * 2, std::max(n, buf_.size())));
      }
    }
    ASSIGN_OR_RETURN(size_t got, in_->Read(buf_.data() + end_, buf_.size() - end_));
    if (got == 0) eof_ = true;
    end_ += got;
  }
  return std::min(n, end_ - begin_);
}

Status RecordReader::Skip(uint64_t n) {
  while (n > 0) {
    ASSIGN_OR_RETURN(size_t avail, Fill(1));
    if (avail == 0) {
      return Status::InvalidArgument("start_offset is past the end of " + name());
    }
    size_t k = static_cast<size_t>(std::min<uint64_t>(n, end_ - begin_));
    begin_ += k;
    pos_ += k;
    n -= k;
  }
  return Status::OK();
}

Status RecordReader::Corrupt(std::string what) const {
  std::string msg = name() + ": " + what + " at offset " + std::to_string(pos_);
  if (pos_ == 0) {
    msg += options_.compression == Compression::kNone
               ? " (the file may not be a TFRecord file, or may be compressed: try "
                 "compression GZIP or ZLIB)"
               : " (the file may not be a TFRecord file, or may use another compression)";
  }
  return Status::DataLoss(std::move(msg));
}

Status RecordReader::ReadRecord(std::string_view* record) {
  while (true) {
    if (pos_ >= options_.end_offset) return Status::OutOfRange("end of range");
    ASSIGN_OR_RETURN(size_t avail, Fill(kRecordHeaderSize));
    if (avail == 0) return Status::OutOfRange("end of file");

    std::string problem;
    const char* head = buf_.data() + begin_;
    uint64_t length = 0;
    if (avail < kRecordHeaderSize) {
      problem = "truncated record header (" + std::to_string(avail) + " of " +
                std::to_string(kRecordHeaderSize) + " bytes)";
    } else {
      length = DecodeFixed64(head);
      if (crc32c::Unmask(DecodeFixed32(head + 8)) != crc32c::Value(head, 8)) {
        problem = "corrupted record: length CRC mismatch";
      }
    }
    if (problem.empty()) {
      const uint64_t overhead = kRecordHeaderSize + kRecordFooterSize;
      const uint64_t remaining =
          stream_size_ >= 0 ? static_cast<uint64_t>(stream_size_) - pos_ : UINT64_MAX;
      if (length > remaining - std::min(remaining, overhead) || length > SIZE_MAX / 2) {
        problem = "truncated record: declares " + std::to_string(length) +
                  " bytes of data but the file has " +
                  std::to_string(remaining - std::min(remaining, overhead)) + " left";
      } else {
        const size_t total = static_cast<size_t>(length + overhead);
        ASSIGN_OR_RETURN(avail, Fill(total));
        if (avail < total) {
          problem = "truncated record: declares " + std::to_string(length) +
                    " bytes of data but the stream ends after " +
                    std::to_string(avail - std::min(avail, kRecordHeaderSize));
        } else {
          const char* data = buf_.data() + begin_ + kRecordHeaderSize;
          if (options_.verify_data_crc &&
              crc32c::Unmask(DecodeFixed32(data + length)) !=
                  crc32c::Value(data, static_cast<size_t>(length))) {
            problem = "corrupted record: data CRC mismatch";
          } else {
            *record = std::string_view(data, static_cast<size_t>(length));
            begin_ += total;
            pos_ += total;
            ++stats_.records;
            resyncing_ = false;
            return Status::OK();
          }
        }
      }
    }

    if (!options_.skip_corrupt) return Corrupt(problem);
    // Resynchronise: step one byte and look for the next record that checks out.
    if (!resyncing_) ++stats_.corrupt_regions;
    resyncing_ = true;
    ++begin_;
    ++pos_;
    ++stats_.skipped_bytes;
  }
}

Result<std::vector<uint64_t>> BuildRecordIndex(const std::string& path,
                                               Compression compression) {
  RecordReaderOptions options;
  options.compression = compression;
  options.verify_data_crc = false;
  ASSIGN_OR_RETURN(auto reader, RecordReader::Open(path, options));
  std::vector<uint64_t> offsets;
  std::string_view record;
  while (true) {
    uint64_t at = reader->offset();
    Status st = reader->ReadRecord(&record);
    if (st.IsOutOfRange()) return offsets;
    RETURN_NOT_OK(st);
    offsets.push_back(at);
  }
}

}  // namespace sparktf
