// hdfs:// and s3:// over the Rust library's C ABI (remote_ffi.h). One adapter serves
// both: the stores differ only in how a write is committed (HDFS: a hidden temporary
// file renamed into place; S3: an upload that completes at commit) and in what error
// messages add (HDFS: which namenode, from which configuration).

#include <cstdlib>
#include <random>

#include "sparktf/fs/hdfs_file_system_internal.h"
#include "sparktf/fs/remote_ffi.h"
#include "sparktf/fs/s3_file_system_internal.h"

extern char** environ;

namespace sparktf {
namespace {

std::chrono::milliseconds FileSystemTimeout() {
  if (const char* env = std::getenv("SPARKTF_FS_TIMEOUT")) {
    char* end = nullptr;
    const double seconds = std::strtod(env, &end);
    if (end != env && seconds > 0) {
      return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
    }
  }
  return kDefaultFileSystemTimeout;
}

// Takes ownership of an FFI error message.
std::string TakeMessage(char* err) {
  std::string msg = err ? err : "unknown error";
  stf_string_free(err);
  return msg;
}

std::string TakeString(char* s) {
  std::string out = s ? s : "";
  stf_string_free(s);
  return out;
}

enum class CommitStyle { kRenameTemporary, kUploadOnCommit };

struct RemoteContext {
  StfFs* fs;
  std::string detail;  // appended to messages, e.g. "[namenode 127.0.0.1:9000 (...)]"
};

class RemoteStatusMaker {
 public:
  explicit RemoteStatusMaker(std::shared_ptr<const RemoteContext> ctx) : ctx_(std::move(ctx)) {}
  // The status of an FFI call: OK for 0, else "<what> <uri>: <message> <detail>".
  // `err` is read only here, after the call that set it has run (argument evaluation
  // order would not guarantee that for a char*).
  Status operator()(int32_t code, char** err, std::string_view what,
                    std::string_view uri) const {
    if (code == 0) return Status::OK();
    std::string msg(what);
    msg += " ";
    msg += uri;
    msg += ": ";
    msg += TakeMessage(*err);
    if (!ctx_->detail.empty()) {
      msg += " ";
      msg += ctx_->detail;
    }
    const int max = static_cast<int>(StatusCode::kLastCode);
    const StatusCode sc = code > 0 && code <= max ? static_cast<StatusCode>(code)
                                                  : StatusCode::kInternal;
    return {sc, std::move(msg)};
  }

 private:
  std::shared_ptr<const RemoteContext> ctx_;
};

std::string PathIn(const std::string& uri) {
  auto parts = ParseUri(uri);
  return parts.ok() ? parts->path : uri;
}

class RemoteInputFile final : public RandomAccessFile {
 public:
  RemoteInputFile(StfReader* reader, std::string uri, RemoteStatusMaker status)
      : reader_(reader), uri_(std::move(uri)), status_(std::move(status)) {}
  ~RemoteInputFile() override { stf_reader_free(reader_); }

  Result<size_t> Read(char* dst, size_t n) override {
    size_t got = 0;
    char* err = nullptr;
    RETURN_NOT_OK(status_(stf_reader_read(reader_, reinterpret_cast<uint8_t*>(dst), n, &got,
                                          &err),
                          &err, "read", uri_));
    return got;
  }
  Result<size_t> ReadAt(uint64_t offset, char* dst, size_t n) override {
    size_t got = 0;
    char* err = nullptr;
    RETURN_NOT_OK(status_(stf_reader_read_at(reader_, offset, reinterpret_cast<uint8_t*>(dst),
                                             n, &got, &err),
                          &err, "read", uri_));
    return got;
  }
  Status Seek(uint64_t position) override {
    char* err = nullptr;
    return status_(stf_reader_seek(reader_, position, &err), &err, "seek", uri_);
  }
  // As last seen: an HDFS file being written grows when a read or seek reaches its end.
  int64_t Size() const override { return static_cast<int64_t>(stf_reader_size(reader_)); }
  const std::string& name() const override { return uri_; }

 private:
  StfReader* reader_;
  std::string uri_;
  RemoteStatusMaker status_;
};

class RemoteWritableFile final : public WritableFile {
 public:
  // Writes `target_path` (a temporary one for kRenameTemporary) of the store; at commit
  // renames it to `final_path` when they differ.
  RemoteWritableFile(std::shared_ptr<const RemoteContext> ctx, StfWriter* writer,
                     std::string uri, std::string target_path, std::string final_path,
                     RemoteStatusMaker status, bool streaming = false)
      : ctx_(std::move(ctx)),
        writer_(writer),
        streaming_(streaming),
        uri_(std::move(uri)),
        target_path_(std::move(target_path)),
        final_path_(std::move(final_path)),
        status_(std::move(status)) {}
  ~RemoteWritableFile() override { (void)Abort(); }

  Status Write(std::string_view data) override {
    if (writer_ == nullptr) return Status::InvalidArgument("write " + uri_ + ": file is closed");
    char* err = nullptr;
    return status_(stf_writer_write(writer_, reinterpret_cast<const uint8_t*>(data.data()),
                                    data.size(), &err),
                   &err, "write", uri_);
  }
  // Streaming files: what was written becomes visible (see stf_writer_sync).
  Status Flush() override {
    if (!streaming_ || writer_ == nullptr) return Status::OK();
    char* err = nullptr;
    return status_(stf_writer_sync(writer_, &err), &err, "flush", uri_);
  }
  Status Close() override {
    if (writer_ == nullptr) return Status::OK();
    char* err = nullptr;
    Status st = status_(stf_writer_commit(writer_, &err), &err, "commit", uri_);
    stf_writer_free(std::exchange(writer_, nullptr));
    if (st.ok() && target_path_ != final_path_) {
      st = status_(stf_fs_rename(ctx_->fs, target_path_.c_str(), final_path_.c_str(), 1, &err),
                   &err, "commit", uri_);
    }
    if (!st.ok() && target_path_ != final_path_) {
      (void)stf_fs_delete(ctx_->fs, target_path_.c_str(), 0, &err);
      stf_string_free(err);
    }
    return st;
  }
  Status Abort() override {
    if (writer_ == nullptr) return Status::OK();
    char* err = nullptr;
    Status st = status_(stf_writer_abort(writer_, &err), &err, "abort", uri_);
    stf_writer_free(std::exchange(writer_, nullptr));
    return st;
  }
  const std::string& name() const override { return uri_; }

 private:
  std::shared_ptr<const RemoteContext> ctx_;
  StfWriter* writer_;
  bool streaming_;
  std::string uri_;
  std::string target_path_;
  std::string final_path_;
  RemoteStatusMaker status_;
};

class RemoteFileSystem final : public FileSystem {
 public:
  RemoteFileSystem(StfFs* fs, std::string detail, CommitStyle commit)
      : ctx_(std::make_shared<RemoteContext>(RemoteContext{fs, std::move(detail)})),
        status_(ctx_),
        commit_(commit) {}
  // The handle stays alive with the context; freeing it joins no threads.
  ~RemoteFileSystem() override { stf_fs_free(ctx_->fs); }

  Result<FileInfo> Stat(const std::string& uri) override {
    StfFileInfo st{};
    char* err = nullptr;
    RETURN_NOT_OK(status_(stf_fs_stat(ctx_->fs, PathIn(uri).c_str(), &st, &err), &err, "stat",
                          uri));
    return FileInfo{uri, st.size, st.mtime_ms, st.is_dir != 0};
  }

  Result<std::vector<FileInfo>> ListDir(const std::string& uri) override {
    StfListing* listing = nullptr;
    char* err = nullptr;
    RETURN_NOT_OK(status_(stf_fs_list(ctx_->fs, PathIn(uri).c_str(), &listing, &err), &err,
                          "list", uri));
    std::vector<FileInfo> out;
    const size_t n = stf_listing_size(listing);
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      StfFileInfo st{};
      const char* name = stf_listing_entry(listing, i, &st);
      out.push_back(FileInfo{JoinUri(uri, name), st.size, st.mtime_ms, st.is_dir != 0});
    }
    stf_listing_free(listing);
    return out;
  }

  Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& uri) override {
    StfReader* reader = nullptr;
    uint64_t size = 0;
    char* err = nullptr;
    RETURN_NOT_OK(status_(stf_reader_open(ctx_->fs, PathIn(uri).c_str(), &reader, &size, &err),
                          &err, "open", uri));
    return std::unique_ptr<RandomAccessFile>(
        std::make_unique<RemoteInputFile>(reader, uri, status_));
  }

  using FileSystem::OpenForWrite;
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& uri,
                                                     const WriteOptions& options) override {
    const std::string final_path = PathIn(uri);
    std::string target = final_path;
    if (commit_ == CommitStyle::kRenameTemporary) {
      static thread_local std::mt19937_64 rng{std::random_device{}()};
      target = JoinUri(UriParent(final_path), "." + std::string(UriBaseName(final_path)) +
                                                  ".sparktf-" + std::to_string(rng() % 1000000000) +
                                                  ".tmp");
    }
    StfWriter* writer = nullptr;
    char* err = nullptr;
    RETURN_NOT_OK(status_(stf_writer_open(ctx_->fs, target.c_str(), options.create_parents,
                                          &writer, &err),
                          &err, "create", uri));
    return std::unique_ptr<WritableFile>(std::make_unique<RemoteWritableFile>(
        ctx_, writer, uri, target, final_path, status_));
  }

  Result<std::unique_ptr<WritableFile>> OpenForStreamingWrite(const std::string& uri) override {
    if (commit_ != CommitStyle::kRenameTemporary) return OpenForWrite(uri);  // S3
    const std::string path = PathIn(uri);
    // Replaces an existing file, as OpenForWrite's commit would.
    char* err = nullptr;
    Status gone = status_(stf_fs_delete(ctx_->fs, path.c_str(), 0, &err), &err, "create", uri);
    if (!gone.ok() && gone.code() != StatusCode::kNotFound) return gone;
    StfWriter* writer = nullptr;
    RETURN_NOT_OK(status_(stf_writer_open(ctx_->fs, path.c_str(), /*create_parents=*/1,
                                          &writer, &err),
                          &err, "create", uri));
    return std::unique_ptr<WritableFile>(std::make_unique<RemoteWritableFile>(
        ctx_, writer, uri, path, path, status_, /*streaming=*/true));
  }

  Status MakeDirs(const std::string& uri) override {
    char* err = nullptr;
    return status_(stf_fs_mkdirs(ctx_->fs, PathIn(uri).c_str(), &err), &err, "mkdirs", uri);
  }

  Status Delete(const std::string& uri, bool recursive) override {
    char* err = nullptr;
    return status_(stf_fs_delete(ctx_->fs, PathIn(uri).c_str(), recursive ? 1 : 0, &err), &err,
                   "delete", uri);
  }

  Status Rename(const std::string& from, const std::string& to) override {
    char* err = nullptr;
    return status_(stf_fs_rename(ctx_->fs, PathIn(from).c_str(), PathIn(to).c_str(), 1, &err),
                   &err, "rename", from + " to " + to);
  }

 private:
  std::shared_ptr<RemoteContext> ctx_;
  RemoteStatusMaker status_;
  CommitStyle commit_;
};

Result<std::shared_ptr<FileSystem>> OpenRemote(
    bool hdfs, const std::string& name, const std::map<std::string, std::string>& config,
    std::string detail, const std::string& uri_for_errors) {
  std::vector<const char*> keys, values;
  for (const auto& [k, v] : config) {
    keys.push_back(k.c_str());
    values.push_back(v.c_str());
  }
  const auto timeout_ms = static_cast<uint64_t>(FileSystemTimeout().count());
  StfFs* fs = nullptr;
  char* err = nullptr;
  const int32_t code =
      hdfs ? stf_hdfs_open(name.c_str(), keys.data(), values.data(), keys.size(), timeout_ms,
                           &fs, &err)
           : stf_s3_open(name.c_str(), keys.data(), values.data(), keys.size(), timeout_ms,
                         &fs, &err);
  auto ctx = std::make_shared<const RemoteContext>(RemoteContext{nullptr, detail});
  RETURN_NOT_OK(RemoteStatusMaker(ctx)(code, &err, "connect to", uri_for_errors));
  return std::shared_ptr<FileSystem>(std::make_shared<RemoteFileSystem>(
      fs, std::move(detail),
      hdfs ? CommitStyle::kRenameTemporary : CommitStyle::kUploadOnCommit));
}

std::map<std::string, std::string> ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq != std::string_view::npos) env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
  }
  return env;
}

}  // namespace

std::string HadoopDefaultFs() { return TakeString(stf_hadoop_default_fs()); }

Result<std::shared_ptr<FileSystem>> MakeHdfsFileSystem(const std::string& authority) {
  const std::string url = "hdfs://" + authority;
  std::string detail = "[" + TakeString(stf_hdfs_describe(url.c_str())) + "]";
  if (authority.empty() && HadoopDefaultFs().empty()) {
    return Status::InvalidArgument(
        url + "/...: hdfs:/// names the default filesystem, but none is configured " +
        detail);
  }
  return OpenRemote(/*hdfs=*/true, url, {}, std::move(detail), url);
}

Result<std::shared_ptr<FileSystem>> MakeS3FileSystem(const std::string& authority) {
  if (authority.empty()) {
    return Status::InvalidArgument("s3:// URIs need a bucket: s3://bucket/key");
  }
  const char* home = std::getenv("HOME");
  auto config = S3ConfigFromEnvironment(ProcessEnvironment(), home ? home : "");
  std::string detail;
  if (auto it = config.find("aws_endpoint"); it != config.end()) {
    detail = "[endpoint " + it->second + "]";
  }
  return OpenRemote(/*hdfs=*/false, authority, config, std::move(detail),
                    "s3://" + authority);
}

}  // namespace sparktf
