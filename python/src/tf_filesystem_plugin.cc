// TensorFlow's modular filesystem plugin (C API of
// tensorflow/c/experimental/filesystem/filesystem_interface.h) over sparktf's
// filesystem seam: TensorFlow itself reads and writes hdfs:// and s3:// (and s3a://)
// through the same clients as sparktf. Loaded by
// tf.experimental.register_filesystem_plugin (sparktf.tf.register_filesystems()).
//
// Only TF_InitPlugin leaves this library, and it links nothing of TensorFlow but the C
// function TF_SetStatus, resolved from the TensorFlow that loads it.
//
// Contract details that matter here:
// - Paths arrive as whole URIs: translate_name keeps the scheme and authority
//   (TensorFlow's default would keep only the path and lose the namenode or bucket).
// - read() is thread-safe and positional; a file remembers where the last read ended,
//   so TensorFlow's sequential reads stream (with read-ahead) instead of one ranged
//   request per call.
// - Writes follow TensorFlow's own local semantics: the file exists from the start and
//   flush() makes what was written visible to readers (HDFS: an hsync, which records the
//   length with the namenode); TensorFlow itself writes checkpoints
//   and SavedModels to temporary names and renames them. On S3 a file appears only at
//   close().
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "sparktf/fs/file_system.h"
#include "tensorflow/c/experimental/filesystem/filesystem_interface.h"
#include "tensorflow/c/tf_status.h"
#include "tf_codes.h"

namespace sparktf::tfplugin {
namespace {

// Sets `status` from `st`; returns st.ok().
bool Set(TF_Status* status, const Status& st) {
  TF_SetStatus(status, ToTfCode(st.code()), st.ok() ? "" : st.message().c_str());
  return st.ok();
}

void* Allocate(size_t size) { return std::malloc(size); }
void Free(void* p) { std::free(p); }

// A zeroed table of operations in TensorFlow-owned memory: operations left null get
// TensorFlow's defaults.
template <typename Ops>
Ops* NewOps(size_t size) {
  auto* ops = static_cast<Ops*>(Allocate(size));
  std::memset(ops, 0, size);
  return ops;
}

char* CopyString(const std::string& s) {
  char* out = static_cast<char*>(Allocate(s.size() + 1));
  std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

// ---- random access files -------------------------------------------------------------

struct ReadFile {
  std::mutex mu;
  std::unique_ptr<RandomAccessFile> file;  // guarded by mu
  uint64_t position = 0;                   // where the stream is; guarded by mu
};

void CleanupReadFile(TF_RandomAccessFile* file) {
  delete static_cast<ReadFile*>(file->plugin_file);
}

int64_t Read(const TF_RandomAccessFile* file, uint64_t offset, size_t n, char* buffer,
             TF_Status* status) {
  auto* f = static_cast<ReadFile*>(file->plugin_file);
  std::lock_guard<std::mutex> lock(f->mu);
  if (offset != f->position) {
    // Not against Size(): a file being written (HDFS) may have grown since it was
    // opened, and the seek asks.
    Status sought = f->file->Seek(offset);
    if (sought.code() == StatusCode::kOutOfRange) {
      TF_SetStatus(status, TF_OUT_OF_RANGE, "read past the end of the file");
      return 0;
    }
    if (!Set(status, sought)) return -1;
    f->position = offset;
  }
  size_t done = 0;
  while (done < n) {
    Result<size_t> got = f->file->Read(buffer + done, n - done);
    if (!got.ok()) {
      Set(status, got.status());
      return -1;
    }
    if (*got == 0) break;
    done += *got;
    f->position += *got;
  }
  if (done < n) {
    TF_SetStatus(status, TF_OUT_OF_RANGE, "read past the end of the file");
  } else {
    TF_SetStatus(status, TF_OK, "");
  }
  return static_cast<int64_t>(done);
}

// ---- writable files -------------------------------------------------------------------

struct WriteFile {
  std::unique_ptr<WritableFile> file;
  int64_t written = 0;
};

void CleanupWriteFile(TF_WritableFile* file) {
  delete static_cast<WriteFile*>(file->plugin_file);  // aborts an unclosed file
}

void Append(const TF_WritableFile* file, const char* buffer, size_t n, TF_Status* status) {
  auto* f = static_cast<WriteFile*>(file->plugin_file);
  if (Set(status, f->file->Write(std::string_view(buffer, n)))) {
    f->written += static_cast<int64_t>(n);
  }
}

int64_t Tell(const TF_WritableFile* file, TF_Status* status) {
  TF_SetStatus(status, TF_OK, "");
  return static_cast<WriteFile*>(file->plugin_file)->written;
}

void Flush(const TF_WritableFile* file, TF_Status* status) {
  Set(status, static_cast<WriteFile*>(file->plugin_file)->file->Flush());
}

void Close(const TF_WritableFile* file, TF_Status* status) {
  Set(status, static_cast<WriteFile*>(file->plugin_file)->file->Close());
}

// ---- the filesystem -------------------------------------------------------------------

void Init(TF_Filesystem* filesystem, TF_Status* status) {
  filesystem->plugin_filesystem = nullptr;
  TF_SetStatus(status, TF_OK, "");
}

void Cleanup(TF_Filesystem*) {}

char* TranslateName(const TF_Filesystem*, const char* uri) { return CopyString(uri); }

void NewRandomAccessFile(const TF_Filesystem*, const char* path, TF_RandomAccessFile* file,
                         TF_Status* status) {
  auto f = OpenInputFile(path);
  if (!Set(status, f.status())) return;
  auto* rf = new ReadFile;
  rf->file = std::move(*f);
  file->plugin_file = rf;
}

void NewWritableFile(const TF_Filesystem*, const char* path, TF_WritableFile* file,
                     TF_Status* status) {
  auto f = OpenStreamingOutputFile(path);
  if (!Set(status, f.status())) return;
  file->plugin_file = new WriteFile{std::move(*f), 0};
}

void NewAppendableFile(const TF_Filesystem*, const char* path, TF_WritableFile* file,
                       TF_Status* status) {
  // Appending rewrites the file with its old contents first (HDFS append and S3 both
  // lack an atomic equivalent); TensorFlow appends rarely (and not on these stores).
  auto exists = PathExists(path);
  if (!Set(status, exists.status())) return;
  std::string old;
  if (*exists) {
    auto in = OpenInputFile(path);
    if (!Set(status, in.status())) return;
    auto data = ReadAll(in->get());
    if (!Set(status, data.status())) return;
    old = std::move(*data);
  }
  auto out = OpenStreamingOutputFile(path);
  if (!Set(status, out.status())) return;
  int64_t written = 0;
  if (!old.empty()) {
    if (!Set(status, (*out)->Write(old))) return;
    written = static_cast<int64_t>(old.size());
  }
  file->plugin_file = new WriteFile{std::move(*out), written};
}

void CreateDir(const TF_Filesystem*, const char* path, TF_Status* status) {
  Set(status, MakeDirs(path));
}

void DeleteFile(const TF_Filesystem*, const char* path, TF_Status* status) {
  auto info = StatPath(path);
  if (!Set(status, info.status())) return;
  if (info->is_dir) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION, (std::string(path) + ": is a directory").c_str());
    return;
  }
  Set(status, DeletePath(path, false));
}

void DeleteDir(const TF_Filesystem*, const char* path, TF_Status* status) {
  auto children = ListDir(path);
  if (children.ok() && !children->empty()) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION,
                 (std::string(path) + ": directory is not empty").c_str());
    return;
  }
  Status st = DeletePath(path, true);
  // S3 has no empty directories: an empty prefix is already gone.
  if (st.code() == StatusCode::kNotFound && children.ok()) st = Status::OK();
  Set(status, st);
}

void DeleteRecursively(const TF_Filesystem*, const char* path, uint64_t* undeleted_files,
                       uint64_t* undeleted_dirs, TF_Status* status) {
  *undeleted_files = 0;
  *undeleted_dirs = 0;
  Status st = DeletePath(path, true);
  if (!st.ok() && st.code() != StatusCode::kNotFound) *undeleted_dirs = 1;
  Set(status, st);
}

void RenameFile(const TF_Filesystem*, const char* src, const char* dst, TF_Status* status) {
  Set(status, RenamePath(src, dst));
}

void PathExistsOp(const TF_Filesystem*, const char* path, TF_Status* status) {
  auto exists = PathExists(path);
  if (!Set(status, exists.status())) return;
  if (!*exists) TF_SetStatus(status, TF_NOT_FOUND, (std::string(path) + ": not found").c_str());
}

void StatOp(const TF_Filesystem*, const char* path, TF_FileStatistics* stats,
            TF_Status* status) {
  auto info = StatPath(path);
  if (!Set(status, info.status())) return;
  stats->length = info->size;
  stats->mtime_nsec = info->mtime_ms * 1000000;
  stats->is_directory = info->is_dir;
}

bool IsDirectory(const TF_Filesystem*, const char* path, TF_Status* status) {
  auto info = StatPath(path);
  if (!Set(status, info.status())) return false;
  if (!info->is_dir) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION,
                 (std::string(path) + ": not a directory").c_str());
  }
  return info->is_dir;
}

int64_t GetFileSize(const TF_Filesystem*, const char* path, TF_Status* status) {
  auto info = StatPath(path);
  if (!Set(status, info.status())) return -1;
  if (info->is_dir) {
    TF_SetStatus(status, TF_FAILED_PRECONDITION, (std::string(path) + ": is a directory").c_str());
    return -1;
  }
  return info->size;
}

// Returns the names in a TensorFlow-owned array.
int ToEntries(const std::vector<std::string>& names, char*** entries) {
  *entries = static_cast<char**>(Allocate(sizeof(char*) * (names.empty() ? 1 : names.size())));
  for (size_t i = 0; i < names.size(); ++i) (*entries)[i] = CopyString(names[i]);
  return static_cast<int>(names.size());
}

int GetChildren(const TF_Filesystem*, const char* path, char*** entries, TF_Status* status) {
  auto children = ListDir(path);
  if (!Set(status, children.status())) return -1;
  std::vector<std::string> names;
  for (const auto& c : *children) names.emplace_back(UriBaseName(c.uri));
  return ToEntries(names, entries);
}

int GetMatchingPaths(const TF_Filesystem*, const char* glob, char*** entries,
                     TF_Status* status) {
  auto matches = Glob(glob);
  if (!Set(status, matches.status())) return -1;
  return ToEntries(*matches, entries);
}

}  // namespace
}  // namespace sparktf::tfplugin

extern "C" __attribute__((visibility("default"))) void TF_InitPlugin(
    TF_FilesystemPluginInfo* info) {
  using namespace sparktf::tfplugin;
  static const char* kSchemes[] = {"hdfs", "s3", "s3a"};
  constexpr size_t kNumSchemes = sizeof(kSchemes) / sizeof(kSchemes[0]);
  info->plugin_memory_allocate = Allocate;
  info->plugin_memory_free = Free;
  info->num_schemes = kNumSchemes;
  info->ops = static_cast<TF_FilesystemPluginOps*>(
      Allocate(kNumSchemes * sizeof(TF_FilesystemPluginOps)));
  for (size_t i = 0; i < kNumSchemes; ++i) {
    TF_FilesystemPluginOps* ops = &info->ops[i];
    std::memset(ops, 0, sizeof(*ops));
    TF_SetFilesystemVersionMetadata(ops);
    ops->scheme = CopyString(kSchemes[i]);

    auto* ra = NewOps<TF_RandomAccessFileOps>(TF_RANDOM_ACCESS_FILE_OPS_SIZE);
    ra->cleanup = CleanupReadFile;
    ra->read = Read;
    ops->random_access_file_ops = ra;

    auto* wf = NewOps<TF_WritableFileOps>(TF_WRITABLE_FILE_OPS_SIZE);
    wf->cleanup = CleanupWriteFile;
    wf->append = Append;
    wf->tell = Tell;
    wf->flush = Flush;
    wf->sync = Flush;
    wf->close = Close;
    ops->writable_file_ops = wf;

    auto* fs = NewOps<TF_FilesystemOps>(TF_FILESYSTEM_OPS_SIZE);
    fs->init = Init;
    fs->cleanup = Cleanup;
    fs->new_random_access_file = NewRandomAccessFile;
    fs->new_writable_file = NewWritableFile;
    fs->new_appendable_file = NewAppendableFile;
    fs->create_dir = CreateDir;
    fs->recursively_create_dir = CreateDir;
    fs->delete_file = DeleteFile;
    fs->delete_dir = DeleteDir;
    fs->delete_recursively = DeleteRecursively;
    fs->rename_file = RenameFile;
    fs->path_exists = PathExistsOp;
    fs->stat = StatOp;
    fs->is_directory = IsDirectory;
    fs->get_file_size = GetFileSize;
    fs->translate_name = TranslateName;
    fs->get_children = GetChildren;
    fs->get_matching_paths = GetMatchingPaths;
    ops->filesystem_ops = fs;
  }
}
