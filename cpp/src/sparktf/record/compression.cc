#include "sparktf/record/compression.h"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace sparktf {
namespace {

constexpr size_t kZlibBufferSize = 256 * 1024;

int WindowBits(Compression kind) { return kind == Compression::kGzip ? 15 + 16 : 15; }

class InflateStream final : public InputStream {
 public:
  InflateStream(std::unique_ptr<InputStream> base, Compression kind)
      : base_(std::move(base)), kind_(kind), in_buf_(kZlibBufferSize) {
    name_ = base_->name();
    z_ = {};
    init_rc_ = inflateInit2(&z_, WindowBits(kind_));
  }
  ~InflateStream() override {
    if (init_rc_ == Z_OK) inflateEnd(&z_);
  }

  Result<size_t> Read(char* dst, size_t n) override {
    if (init_rc_ != Z_OK) return Status::Internal("inflateInit2 failed for " + name_);
    if (n == 0 || finished_) return size_t{0};
    z_.next_out = reinterpret_cast<Bytef*>(dst);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(n, 1u << 30));
    const uInt want = z_.avail_out;
    while (z_.avail_out == want) {
      if (z_.avail_in == 0 && !base_eof_) {
        ASSIGN_OR_RETURN(size_t got, base_->Read(in_buf_.data(), in_buf_.size()));
        if (got == 0) base_eof_ = true;
        z_.next_in = reinterpret_cast<Bytef*>(in_buf_.data());
        z_.avail_in = static_cast<uInt>(got);
        consumed_ += got;
      }
      if (z_.avail_in == 0 && base_eof_) {
        if (at_member_start_) {  // clean end after a complete stream
          finished_ = true;
          break;
        }
        return Status::DataLoss("truncated " + std::string(CompressionName(kind_)) +
                                " stream in " + name_);
      }
      const uInt avail_before = z_.avail_in;
      int rc = inflate(&z_, Z_NO_FLUSH);
      if (z_.avail_in != avail_before) at_member_start_ = false;
      if (rc == Z_STREAM_END) {
        ++members_done_;
        // A GZIP file may hold several members (concatenated .gz files).
        at_member_start_ = true;
        inflateReset(&z_);
        if (kind_ != Compression::kGzip) {
          finished_ = true;
          break;
        }
        continue;
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        std::string msg = "corrupt " + std::string(CompressionName(kind_)) +
                          " stream in " + name_ + " near compressed byte " +
                          std::to_string(consumed_ - z_.avail_in) + ": " +
                          (z_.msg ? z_.msg : "inflate error");
        if (produced_ == 0 && members_done_ == 0) {
          msg += " (is the file really " + std::string(CompressionName(kind_)) +
                 "-compressed? try another compression)";
        }
        return Status::DataLoss(std::move(msg));
      }
    }
    size_t got = want - z_.avail_out;
    produced_ += got;
    return got;
  }
  Status Seek(uint64_t) override {
    return Status::InvalidArgument("cannot seek in compressed stream " + name_);
  }
  int64_t Size() const override { return -1; }
  const std::string& name() const override { return name_; }

 private:
  std::unique_ptr<InputStream> base_;
  Compression kind_;
  std::vector<char> in_buf_;
  z_stream z_;
  int init_rc_;
  bool base_eof_ = false;
  bool finished_ = false;
  bool at_member_start_ = true;
  uint64_t consumed_ = 0;
  uint64_t produced_ = 0;
  uint64_t members_done_ = 0;
  std::string name_;
};

class DeflateStream final : public OutputStream {
 public:
  // zlib's state points back at the z_stream, so it is initialised in place.
  DeflateStream(std::unique_ptr<OutputStream> base, Compression kind, int level)
      : base_(std::move(base)), out_buf_(kZlibBufferSize) {
    z_ = {};
    init_ok_ = deflateInit2(&z_, level, Z_DEFLATED, WindowBits(kind), 8,
                            Z_DEFAULT_STRATEGY) == Z_OK;
    ended_ = !init_ok_;
  }
  ~DeflateStream() override {
    if (!ended_) deflateEnd(&z_);
  }
  bool init_ok() const { return init_ok_; }

  Status Write(std::string_view data) override {
    if (ended_) return Status::InvalidArgument("write " + name() + ": stream is closed");
    z_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z_.avail_in = static_cast<uInt>(data.size());
    return Pump(Z_NO_FLUSH);
  }
  Status Flush() override {
    if (ended_) return Status::OK();
    RETURN_NOT_OK(Pump(Z_SYNC_FLUSH));
    return base_->Flush();
  }
  Status Close() override {
    if (ended_) return Status::OK();
    Status st = Pump(Z_FINISH);
    deflateEnd(&z_);
    ended_ = true;
    Status close_st = base_->Close();
    return st.ok() ? close_st : st;
  }
  const std::string& name() const override { return base_->name(); }

 private:
  Status Pump(int flush) {
    while (true) {
      z_.next_out = reinterpret_cast<Bytef*>(out_buf_.data());
      z_.avail_out = static_cast<uInt>(out_buf_.size());
      int rc = deflate(&z_, flush);
      if (rc == Z_STREAM_ERROR) return Status::Internal("deflate failed for " + name());
      size_t have = out_buf_.size() - z_.avail_out;
      if (have > 0) RETURN_NOT_OK(base_->Write({out_buf_.data(), have}));
      if (flush == Z_FINISH) {
        if (rc == Z_STREAM_END) return Status::OK();
      } else if (z_.avail_in == 0 && z_.avail_out != 0) {
        return Status::OK();
      }
    }
  }

  std::unique_ptr<OutputStream> base_;
  z_stream z_;
  std::vector<char> out_buf_;
  bool init_ok_ = false;
  bool ended_ = false;
};

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

}  // namespace

Result<Compression> ParseCompression(std::string_view name) {
  std::string n = Lower(name);
  if (n.empty() || n == "none") return Compression::kNone;
  if (n == "gzip") return Compression::kGzip;
  if (n == "zlib") return Compression::kZlib;
  return Status::InvalidArgument("unknown compression '" + std::string(name) +
                                 "' (expected none, GZIP or ZLIB)");
}

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kGzip: return "GZIP";
    case Compression::kZlib: return "ZLIB";
  }
  return "?";
}

Compression CompressionFromPath(std::string_view path) {
  std::string p = Lower(path);
  auto ends_with = [&](std::string_view suffix) { return p.ends_with(suffix); };
  if (ends_with(".gz") || ends_with(".gzip")) return Compression::kGzip;
  if (ends_with(".zlib") || ends_with(".zz")) return Compression::kZlib;
  return Compression::kNone;
}

std::unique_ptr<InputStream> MakeInflateStream(std::unique_ptr<InputStream> base,
                                               Compression kind) {
  if (kind == Compression::kNone) return base;
  return std::make_unique<InflateStream>(std::move(base), kind);
}

Result<std::unique_ptr<OutputStream>> MakeDeflateStream(
    std::unique_ptr<OutputStream> base, Compression kind, int level) {
  if (kind == Compression::kNone) return base;
  if (level < -1 || level > 9) {
    return Status::InvalidArgument("compression level must be -1..9, got " +
                                   std::to_string(level));
  }
  auto stream = std::make_unique<DeflateStream>(std::move(base), kind, level);
  if (!stream->init_ok()) return Status::Internal("deflateInit2 failed");
  return std::unique_ptr<OutputStream>(std::move(stream));
}

}  // namespace sparktf
