#include "sparktf/common/io.h"

#include <algorithm>
#include <cstring>

namespace sparktf {
namespace {

class MemoryInputStream final : public InputStream {
 public:
  MemoryInputStream(std::string_view data, std::string name)
      : data_(data), name_(std::move(name)) {}
  Result<size_t> Read(char* dst, size_t n) override {
    size_t k = std::min(n, data_.size() - pos_);
    if (k > 0) std::memcpy(dst, data_.data() + pos_, k);
    pos_ += k;
    return k;
  }
  Status Seek(uint64_t position) override {
    if (position > data_.size()) {
      return Status::InvalidArgument("seek past the end of " + name_);
    }
    pos_ = static_cast<size_t>(position);
    return Status::OK();
  }
  int64_t Size() const override { return static_cast<int64_t>(data_.size()); }
  const std::string& name() const override { return name_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
  std::string name_;
};

// Holds the bytes it serves.
class OwnedMemoryInputStream final : public InputStream {
 public:
  OwnedMemoryInputStream(std::string data, std::string name)
      : data_(std::move(data)), view_(MakeMemoryInputStream(data_, std::move(name))) {}
  Result<size_t> Read(char* dst, size_t n) override { return view_->Read(dst, n); }
  Status Seek(uint64_t position) override { return view_->Seek(position); }
  int64_t Size() const override { return view_->Size(); }
  const std::string& name() const override { return view_->name(); }

 private:
  std::string data_;
  std::unique_ptr<InputStream> view_;
};

class StringOutputStream final : public OutputStream {
 public:
  StringOutputStream(std::string* sink, std::string name)
      : sink_(sink), name_(std::move(name)) {}
  Status Write(std::string_view data) override {
    if (closed_) return Status::InvalidArgument("write " + name_ + ": stream is closed");
    sink_->append(data);
    return Status::OK();
  }
  Status Flush() override { return Status::OK(); }
  Status Close() override {
    closed_ = true;
    return Status::OK();
  }
  const std::string& name() const override { return name_; }

 private:
  std::string* sink_;
  std::string name_;
  bool closed_ = false;
};

}  // namespace

std::unique_ptr<InputStream> MakeMemoryInputStream(std::string_view data,
                                                   std::string name) {
  return std::make_unique<MemoryInputStream>(data, std::move(name));
}

std::unique_ptr<InputStream> MakeOwnedMemoryInputStream(std::string data,
                                                        std::string name) {
  return std::make_unique<OwnedMemoryInputStream>(std::move(data), std::move(name));
}

std::unique_ptr<OutputStream> MakeStringOutputStream(std::string* sink,
                                                     std::string name) {
  return std::make_unique<StringOutputStream>(sink, std::move(name));
}

Result<std::string> ReadAll(InputStream* in) {
  std::string out;
  size_t chunk = 1 << 16;
  while (true) {
    size_t old = out.size();
    out.resize(old + chunk);
    ASSIGN_OR_RETURN(size_t got, in->Read(out.data() + old, chunk));
    out.resize(old + got);
    if (got == 0) return out;
  }
}

}  // namespace sparktf
