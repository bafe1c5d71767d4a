#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <random>

#include "sparktf/fs/local_file_system_internal.h"

namespace sparktf {
namespace {

// "file:///x" -> "/x"; bare paths stay as they are.
std::string LocalPath(const std::string& uri) {
  if (!HasScheme(uri)) return uri;
  auto parts = ParseUri(uri);
  return parts.ok() ? parts->path : uri;
}

class PosixInputFile final : public RandomAccessFile {
 public:
  PosixInputFile(int fd, std::string uri) : fd_(fd), uri_(std::move(uri)) {}
  ~PosixInputFile() override { ::close(fd_); }

  Result<size_t> Read(char* dst, size_t n) override {
    while (true) {
      const ssize_t got = ::read(fd_, dst, n);
      if (got >= 0) return static_cast<size_t>(got);
      if (errno != EINTR) return Status::FromErrno("read " + uri_, errno);
    }
  }
  Result<size_t> ReadAt(uint64_t offset, char* dst, size_t n) override {
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd_, dst + done, n - done,
                                  static_cast<off_t>(offset + done));
      if (got < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno("read " + uri_, errno);
      }
      if (got == 0) break;
      done += static_cast<size_t>(got);
    }
    return done;
  }
  Status Seek(uint64_t position) override {
    if (::lseek(fd_, static_cast<off_t>(position), SEEK_SET) < 0) {
      return Status::FromErrno("seek " + uri_, errno);
    }
    return Status::OK();
  }
  // Now, not when opened: a file being written grows.
  int64_t Size() const override {
    struct stat st;
    return ::fstat(fd_, &st) == 0 ? static_cast<int64_t>(st.st_size) : -1;
  }
  const std::string& name() const override { return uri_; }

 private:
  int fd_;
  std::string uri_;
};

std::string TempSibling(const std::string& path) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  const std::string dir = UriParent(path);
  return JoinUri(dir, "." + std::string(UriBaseName(path)) + ".sparktf-" +
                          std::to_string(rng() % 1000000000) + ".tmp");
}

// Writes a hidden sibling and renames it over the final path at Close(); or, when
// `tmp` equals `path` (a streaming write), writes the final path itself.
class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string uri, std::string path, std::string tmp)
      : fd_(fd), uri_(std::move(uri)), path_(std::move(path)), tmp_(std::move(tmp)) {}
  ~PosixWritableFile() override { (void)Abort(); }

  Status Write(std::string_view data) override {
    if (fd_ < 0) return Status::InvalidArgument("write " + uri_ + ": file is closed");
    while (!data.empty()) {
      const ssize_t put = ::write(fd_, data.data(), data.size());
      if (put < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno("write " + uri_, errno);
      }
      data.remove_prefix(static_cast<size_t>(put));
    }
    return Status::OK();
  }
  Status Flush() override { return Status::OK(); }
  Status Close() override {
    if (fd_ < 0) return Status::OK();
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) {
      const int err = errno;
      ::unlink(tmp_.c_str());
      return Status::FromErrno("close " + uri_, err);
    }
    if (tmp_ != path_ && ::rename(tmp_.c_str(), path_.c_str()) != 0) {
      const int err = errno;
      ::unlink(tmp_.c_str());
      return Status::FromErrno("commit " + uri_, err);
    }
    return Status::OK();
  }
  Status Abort() override {
    if (fd_ < 0) return Status::OK();
    ::close(std::exchange(fd_, -1));
    if (::unlink(tmp_.c_str()) != 0 && errno != ENOENT) {
      return Status::FromErrno("abort " + uri_, errno);
    }
    return Status::OK();
  }
  const std::string& name() const override { return uri_; }

 private:
  int fd_;
  std::string uri_;
  std::string path_;
  std::string tmp_;
};

FileInfo InfoFromStat(std::string uri, const struct stat& st) {
  FileInfo info;
  info.uri = std::move(uri);
  info.size = static_cast<int64_t>(st.st_size);
  info.mtime_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
  info.is_dir = S_ISDIR(st.st_mode);
  return info;
}

class LocalFileSystem final : public FileSystem {
 public:
  Result<FileInfo> Stat(const std::string& uri) override {
    struct stat st {};
    if (::stat(LocalPath(uri).c_str(), &st) != 0) return Status::FromErrno("stat " + uri, errno);
    return InfoFromStat(uri, st);
  }

  Result<std::vector<FileInfo>> ListDir(const std::string& uri) override {
    const std::string path = LocalPath(uri);
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return Status::FromErrno("list " + uri, errno);
    std::vector<FileInfo> out;
    errno = 0;
    while (struct dirent* e = ::readdir(dir)) {
      const std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      struct stat st {};
      const std::string child = JoinUri(path, name);
      if (::stat(child.c_str(), &st) != 0) continue;  // vanished or a dangling link
      out.push_back(InfoFromStat(JoinUri(uri, name), st));
      errno = 0;
    }
    const int err = errno;
    ::closedir(dir);
    if (err != 0) return Status::FromErrno("list " + uri, err);
    return out;
  }

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& uri) override {
    const std::string path = LocalPath(uri);
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno("open " + uri, errno);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return Status::FromErrno("stat " + uri, err);
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return Status::InvalidArgument("open " + uri + ": is a directory");
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<PosixInputFile>(fd, uri));
  }

  using FileSystem::OpenForWrite;
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& uri,
                                                     const WriteOptions& options) override {
    const std::string path = LocalPath(uri);
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return Status::InvalidArgument("create " + uri + ": is a directory");
    }
    if (options.create_parents) {
      std::error_code ec;
      std::filesystem::create_directories(UriParent(path), ec);
    }
    const std::string tmp = TempSibling(path);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno("create " + uri, errno);
    return std::unique_ptr<WritableFile>(
        std::make_unique<PosixWritableFile>(fd, uri, path, tmp));
  }

  Result<std::unique_ptr<WritableFile>> OpenForStreamingWrite(const std::string& uri) override {
    const std::string path = LocalPath(uri);
    std::error_code ec;
    std::filesystem::create_directories(UriParent(path), ec);
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno("create " + uri, errno);
    return std::unique_ptr<WritableFile>(
        std::make_unique<PosixWritableFile>(fd, uri, path, path));
  }

  Status MakeDirs(const std::string& uri) override {
    std::error_code ec;
    std::filesystem::create_directories(LocalPath(uri), ec);
    if (ec) return Status::FromErrno("mkdirs " + uri, ec.value());
    return Status::OK();
  }

  Status Delete(const std::string& uri, bool recursive) override {
    const std::string path = LocalPath(uri);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return Status::FromErrno("delete " + uri, errno);
    std::error_code ec;
    if (S_ISDIR(st.st_mode) && recursive) {
      std::filesystem::remove_all(path, ec);
    } else {
      std::filesystem::remove(path, ec);
    }
    if (ec) return Status::FromErrno("delete " + uri, ec.value());
    return Status::OK();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(LocalPath(from).c_str(), LocalPath(to).c_str()) != 0) {
      return Status::FromErrno("rename " + from + " to " + to, errno);
    }
    return Status::OK();
  }
};

}  // namespace

std::shared_ptr<FileSystem> MakeLocalFileSystem() {
  static auto fs = std::make_shared<LocalFileSystem>();
  return fs;
}

}  // namespace sparktf
