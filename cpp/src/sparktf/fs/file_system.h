// The filesystem seam: one interface for local files, hdfs:// and s3://, chosen by the
// URI's scheme from a registry (the shape of Arrow's FileSystem and LevelDB's Env).
//
// Paths are URIs: "scheme://authority/path", "hdfs:///path" (the cluster's default
// filesystem, fs.defaultFS) or a bare local path ("/data/x", "rel/x"; "file:///x" is
// the same file). A FileSystem takes and returns URIs of its own kind, so callers never
// split or branch on schemes: listing "hdfs:///d" yields "hdfs:///d/part-0".
//
// Errors: NotFound for a missing path, PermissionDenied when the store refuses,
// InvalidArgument for a malformed URI or an unknown scheme (the message lists the known
// ones), Unavailable / DeadlineExceeded when a server does not answer (every remote call
// is bounded by the filesystem's timeout), DataLoss when a stream ends early. Messages
// name the URI and, for HDFS, the namenode and where its address came from.
//
// Thread safety: FileSystem objects are safe to share between threads; the files they
// open are not (one owner each).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "sparktf/common/io.h"
#include "sparktf/common/result.h"

namespace sparktf {

// Bounds every remote call; SPARKTF_FS_TIMEOUT (seconds) overrides it.
inline constexpr std::chrono::seconds kDefaultFileSystemTimeout{30};

struct FileInfo {
  std::string uri;  // as the caller would name it: the listed directory's URI + "/" + name
  int64_t size = 0;
  int64_t mtime_ms = 0;
  bool is_dir = false;
};

// An open file: sequential reads (InputStream) plus positional ones.
class RandomAccessFile : public InputStream {
 public:
  // Reads up to n bytes at `offset` without moving the stream position; fewer only at
  // the end of the file.
  virtual Result<size_t> ReadAt(uint64_t offset, char* dst, size_t n) = 0;
};

// How OpenForWrite creates a file.
struct WriteOptions {
  // Make missing parent directories (as HDFS and S3 writes do). When false, a missing
  // parent is NotFound, and no directory is made; stores without directories (S3)
  // ignore it.
  bool create_parents = true;
};

// A file being written. Nothing is visible at its URI until Close() (the commit)
// succeeds, which replaces any file already there. Abort() drops what was written and
// leaves nothing behind; so does destroying the object without Close().
class WritableFile : public OutputStream {
 public:
  virtual Status Abort() = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;
  FileSystem(const FileSystem&) = delete;
  FileSystem& operator=(const FileSystem&) = delete;

  virtual Result<FileInfo> Stat(const std::string& uri) = 0;
  // The direct children of a directory, in no particular order.
  virtual Result<std::vector<FileInfo>> ListDir(const std::string& uri) = 0;
  virtual Result<std::unique_ptr<RandomAccessFile>> OpenForRead(const std::string& uri) = 0;
  virtual Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& uri,
                                                             const WriteOptions& options) = 0;
  Result<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& uri) {
    return OpenForWrite(uri, WriteOptions{});
  }
  // A file that exists at its URI from the start and whose readers see what Flush()
  // pushed (local files: every write; HDFS: an hsync, which records the length with the
  // namenode), for logs that are read while they grow (TensorBoard event files). Close() finishes it; Abort() deletes it. Stores that
  // cannot show a file before it is complete (S3) give OpenForWrite's file instead.
  virtual Result<std::unique_ptr<WritableFile>> OpenForStreamingWrite(const std::string& uri) {
    return OpenForWrite(uri);
  }
  // Creates the directory and its missing parents; OK if it exists. (S3: nothing to do.)
  virtual Status MakeDirs(const std::string& uri) = 0;
  // Deletes a file, or a directory and everything below it when `recursive`.
  virtual Status Delete(const std::string& uri, bool recursive) = 0;
  // Moves a file, replacing `to`. Atomic on local disks and HDFS; S3 copies then
  // deletes, so a reader may see both for a moment.
  virtual Status Rename(const std::string& from, const std::string& to) = 0;

 protected:
  FileSystem() = default;
};

// Makes the filesystem for one "scheme://authority" (authority may be empty).
using FileSystemFactory =
    std::function<Result<std::shared_ptr<FileSystem>>(const std::string& authority)>;

// Maps URI schemes to filesystems. Filesystems are made on first use and kept per
// scheme and authority (per process: a child after fork() makes its own, since remote
// clients hold threads). Thread-safe.
class FileSystemRegistry {
 public:
  // The registry every URI-taking function of sparktf uses: "file" (and bare paths),
  // "hdfs", "s3" and "s3a" (the same store).
  static FileSystemRegistry& Default();

  // Adds or replaces a scheme (tests register in-memory fakes this way).
  void Register(const std::string& scheme, FileSystemFactory factory);
  void Unregister(const std::string& scheme);
  // The filesystem that serves `uri`.
  Result<std::shared_ptr<FileSystem>> ForUri(const std::string& uri);
  // Known schemes, sorted, for messages.
  std::vector<std::string> Schemes() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, FileSystemFactory> factories_;
  std::map<std::string, std::shared_ptr<FileSystem>> cache_;  // "scheme://authority"
  int cache_pid_ = 0;
};

// Parts of a URI. Bare paths have scheme "" (or "file" when written file://...).
struct UriParts {
  std::string scheme;
  std::string authority;
  std::string path;  // starts with '/' for absolute paths
};
Result<UriParts> ParseUri(const std::string& uri);
bool HasScheme(std::string_view uri);
// `dir` + "/" + `name`, without doubling slashes.
std::string JoinUri(std::string_view dir, std::string_view name);
// The last path component ("part-0" of "hdfs:///d/part-0").
std::string_view UriBaseName(std::string_view uri);
// The URI of the parent directory ("hdfs:///d" of "hdfs:///d/part-0").
std::string UriParent(std::string_view uri);

// ---- Convenience over the default registry: what callers use. ----

Result<std::unique_ptr<RandomAccessFile>> OpenInputFile(const std::string& uri);
Result<std::unique_ptr<WritableFile>> OpenOutputFile(const std::string& uri,
                                                     const WriteOptions& options = {});
Result<std::unique_ptr<WritableFile>> OpenStreamingOutputFile(const std::string& uri);
Result<FileInfo> StatPath(const std::string& uri);
// NotFound is false; other errors are errors.
Result<bool> PathExists(const std::string& uri);
Result<std::vector<FileInfo>> ListDir(const std::string& uri);
Status MakeDirs(const std::string& uri);
Status DeletePath(const std::string& uri, bool recursive);
Status RenamePath(const std::string& from, const std::string& to);
// Matches `pattern` (shell wildcards * ? [...] in any path component) and returns the
// matching URIs in name order; a pattern without wildcards returns itself if it exists.
Result<std::vector<std::string>> Glob(const std::string& pattern);
bool HasGlobChars(std::string_view uri);

}  // namespace sparktf

namespace sparktf {

// Input files the way Spark/Hadoop output directories look: a directory stands for its
// regular files in name order, skipping hidden and bookkeeping entries (names starting
// with '.' or '_', e.g. _SUCCESS, _temporary); a pattern with wildcards stands for its
// matches (NotFound if none); a file stands for itself. A missing path is NotFound.
Result<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& paths);

}  // namespace sparktf
