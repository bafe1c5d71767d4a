// Internal to tests: an in-memory FileSystem for exercising callers of the seam
// (listing, globbing, record reading and writing) without disks or servers, with
// optional fault injection.
#pragma once

#include <cstring>
#include <map>
#include <mutex>

#include "sparktf/fs/file_system.h"

namespace sparktf::testing {

// Files and directories keyed by full URI ("mem://bucket/a/b"). Directories are
// implicit: a path is a directory when some file lies below it. Thread-safe.
class MemoryFileSystem final : public FileSystem {
 public:
  std::map<std::string, std::string> files;  // guarded by mu
  std::mutex mu;
  // When set, reads of this URI fail after this many bytes with kUnavailable.
  std::string fail_reads_of;
  size_t fail_after_ = 0;
  int stat_calls = 0;
  int list_calls = 0;

  void Put(const std::string& uri, std::string data) {
    std::lock_guard<std::mutex> lock(mu);
    files[uri] = std::move(data);
  }

  Result<FileInfo> Stat(const std::string& uri) override {
    std::lock_guard<std::mutex> lock(mu);
    ++stat_calls;
    if (auto it = files.find(uri); it != files.end()) {
      return FileInfo{uri, static_cast<int64_t>(it->second.size()), 0, false};
    }
    const std::string prefix = JoinUri(uri, "");
    for (const auto& [k, _] : files) {
      if (k.starts_with(prefix)) return FileInfo{uri, 0, 0, true};
    }
    return Status::NotFound("stat " + uri + ": no such file");
  }

  Result<std::vector<FileInfo>> ListDir(const std::string& uri) override {
    std::lock_guard<std::mutex> lock(mu);
    ++list_calls;
    const std::string prefix = JoinUri(uri, "");
    std::map<std::string, FileInfo> children;
    for (const auto& [k, v] : files) {
      if (!k.starts_with(prefix)) continue;
      const std::string rest = k.substr(prefix.size());
      const size_t slash = rest.find('/');
      const std::string name = rest.substr(0, slash);
      const bool dir = slash != std::string::npos;
      children[name] = FileInfo{prefix + name, dir ? 0 : static_cast<int64_t>(v.size()), 0,
                                dir};
    }
    if (children.empty()) return Status::NotFound("list " + uri + ": no such directory");
    std::vector<FileInfo> out;
    for (auto& [_, info] : children) out.push_back(std::move(info));
    return out;
  }

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& uri) override;
  using FileSystem::OpenForWrite;
  // Like S3: no directories, so `options` changes nothing.
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& uri,
                                                     const WriteOptions& options) override;

  Status MakeDirs(const std::string&) override { return Status::OK(); }
  Status Delete(const std::string& uri, bool recursive) override {
    std::lock_guard<std::mutex> lock(mu);
    if (files.erase(uri)) return Status::OK();
    if (!recursive) return Status::NotFound("delete " + uri);
    const std::string prefix = JoinUri(uri, "");
    std::erase_if(files, [&](const auto& kv) { return kv.first.starts_with(prefix); });
    return Status::OK();
  }
  Status Rename(const std::string& from, const std::string& to) override {
    std::lock_guard<std::mutex> lock(mu);
    auto it = files.find(from);
    if (it == files.end()) return Status::NotFound("rename " + from);
    files[to] = std::move(it->second);
    files.erase(from);
    return Status::OK();
  }
};

class MemoryInputFile final : public RandomAccessFile {
 public:
  MemoryInputFile(std::string uri, std::string data, size_t fail_after)
      : uri_(std::move(uri)), data_(std::move(data)), fail_after_(fail_after) {}
  Result<size_t> Read(char* dst, size_t n) override {
    ASSIGN_OR_RETURN(size_t got, ReadAt(pos_, dst, n));
    pos_ += got;
    return got;
  }
  Result<size_t> ReadAt(uint64_t offset, char* dst, size_t n) override {
    if (offset >= data_.size()) return size_t{0};
    if (offset + n > fail_after_) {
      return Status::Unavailable("read " + uri_ + ": injected failure");
    }
    const size_t k = std::min<size_t>(n, data_.size() - offset);
    std::memcpy(dst, data_.data() + offset, k);
    return k;
  }
  Status Seek(uint64_t position) override {
    pos_ = position;
    return Status::OK();
  }
  int64_t Size() const override { return static_cast<int64_t>(data_.size()); }
  const std::string& name() const override { return uri_; }

 private:
  std::string uri_;
  std::string data_;
  size_t fail_after_;
  uint64_t pos_ = 0;
};

class MemoryWritableFile final : public WritableFile {
 public:
  MemoryWritableFile(MemoryFileSystem* fs, std::string uri) : fs_(fs), uri_(std::move(uri)) {}
  Status Write(std::string_view data) override {
    if (done_) return Status::InvalidArgument("closed");
    buf_.append(data);
    return Status::OK();
  }
  Status Flush() override { return Status::OK(); }
  Status Close() override {
    if (done_) return Status::OK();
    done_ = true;
    fs_->Put(uri_, std::move(buf_));
    return Status::OK();
  }
  Status Abort() override {
    done_ = true;
    return Status::OK();
  }
  const std::string& name() const override { return uri_; }

 private:
  MemoryFileSystem* fs_;
  std::string uri_;
  std::string buf_;
  bool done_ = false;
};

inline Result<std::unique_ptr<RandomAccessFile>> MemoryFileSystem::OpenForRead(
    const std::string& uri) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = files.find(uri);
  if (it == files.end()) return Status::NotFound("open " + uri + ": no such file");
  const size_t fail_after = uri == fail_reads_of ? fail_after_ : SIZE_MAX;
  return std::unique_ptr<RandomAccessFile>(
      std::make_unique<MemoryInputFile>(uri, it->second, fail_after));
}

inline Result<std::unique_ptr<WritableFile>> MemoryFileSystem::OpenForWrite(
    const std::string& uri, const WriteOptions&) {
  return std::unique_ptr<WritableFile>(std::make_unique<MemoryWritableFile>(this, uri));
}

}  // namespace sparktf::testing
