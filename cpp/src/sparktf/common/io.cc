#include "sparktf/common/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace sparktf {
namespace {

class PosixInputFile final : public InputStream {
 public:
  PosixInputFile(int fd, std::string path, int64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  ~PosixInputFile() override { ::close(fd_); }

  Result<size_t> Read(char* dst, size_t n) override {
    while (true) {
      ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) return Status::FromErrno("read " + path_, errno);
    }
  }
  Status Seek(uint64_t position) override {
    if (::lseek(fd_, static_cast<off_t>(position), SEEK_SET) < 0) {
      return Status::FromErrno("seek " + path_, errno);
    }
    return Status::OK();
  }
  int64_t Size() const override { return size_; }
  const std::string& name() const override { return path_; }

 private:
  int fd_;
  std::string path_;
  int64_t size_;
};

class PosixOutputFile final : public OutputStream {
 public:
  PosixOutputFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  ~PosixOutputFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Write(std::string_view data) override {
    if (fd_ < 0) return Status::InvalidArgument("write " + path_ + ": file is closed");
    while (!data.empty()) {
      ssize_t put = ::write(fd_, data.data(), data.size());
      if (put < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno("write " + path_, errno);
      }
      data.remove_prefix(static_cast<size_t>(put));
    }
    return Status::OK();
  }
  Status Flush() override { return Status::OK(); }
  Status Close() override {
    if (fd_ < 0) return Status::OK();
    int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return Status::FromErrno("close " + path_, errno);
    return Status::OK();
  }
  const std::string& name() const override { return path_; }

 private:
  int fd_;
  std::string path_;
};

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

Result<std::unique_ptr<InputStream>> OpenInputFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno("open " + path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    return Status::FromErrno("stat " + path, err);
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Status::InvalidArgument("open " + path + ": is a directory");
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::unique_ptr<InputStream>(
      std::make_unique<PosixInputFile>(fd, path, static_cast<int64_t>(st.st_size)));
}

Result<std::unique_ptr<OutputStream>> OpenOutputFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno("create " + path, errno);
  return std::unique_ptr<OutputStream>(std::make_unique<PosixOutputFile>(fd, path));
}

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
