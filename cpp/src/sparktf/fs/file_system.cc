#include "sparktf/fs/file_system.h"

#include <fnmatch.h>
#include <unistd.h>

#include <algorithm>

#include "sparktf/fs/hdfs_file_system_internal.h"
#include "sparktf/fs/local_file_system_internal.h"
#include "sparktf/fs/s3_file_system_internal.h"

namespace sparktf {

// ---- URIs ----------------------------------------------------------------------------

bool HasScheme(std::string_view uri) {
  const size_t colon = uri.find("://");
  if (colon == std::string_view::npos || colon == 0) return false;
  for (size_t i = 0; i < colon; ++i) {
    const char c = uri[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) return false;
  }
  return true;
}

Result<UriParts> ParseUri(const std::string& uri) {
  if (uri.empty()) return Status::InvalidArgument("empty path");
  UriParts parts;
  if (!HasScheme(uri)) {
    parts.path = uri;
    return parts;
  }
  const size_t colon = uri.find("://");
  parts.scheme = uri.substr(0, colon);
  std::transform(parts.scheme.begin(), parts.scheme.end(), parts.scheme.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const size_t start = colon + 3;
  const size_t slash = uri.find('/', start);
  parts.authority = uri.substr(start, slash == std::string::npos ? std::string::npos
                                                                  : slash - start);
  parts.path = slash == std::string::npos ? "/" : uri.substr(slash);
  return parts;
}

std::string JoinUri(std::string_view dir, std::string_view name) {
  std::string out(dir);
  // Trailing slashes go, but not the root's: "/" or the one after "scheme://authority"
  // (added when missing, so that "s3://b" + "k" is "s3://b/k").
  size_t root = 0;
  if (const size_t p = out.find("://"); p != std::string::npos) {
    root = out.find('/', p + 3);
    if (root == std::string::npos) {
      root = out.size();
      out.push_back('/');
    }
  }
  while (out.size() > root + 1 && out.back() == '/') out.pop_back();
  if (!out.empty() && out.back() != '/') out.push_back('/');
  while (!name.empty() && name.front() == '/') name.remove_prefix(1);
  out.append(name);
  return out;
}

std::string_view UriBaseName(std::string_view uri) {
  while (uri.size() > 1 && uri.back() == '/') uri.remove_suffix(1);
  const size_t slash = uri.rfind('/');
  return slash == std::string_view::npos ? uri : uri.substr(slash + 1);
}

std::string UriParent(std::string_view uri) {
  while (uri.size() > 1 && uri.back() == '/') uri.remove_suffix(1);
  const size_t slash = uri.rfind('/');
  if (slash == std::string_view::npos) return ".";
  const size_t scheme_end = uri.find("://");
  if (scheme_end != std::string_view::npos && slash < scheme_end + 3) return std::string(uri);
  if (slash == 0) return "/";
  // Keep "hdfs:///" rather than "hdfs://" for a file right under the root.
  if (scheme_end != std::string_view::npos && slash == scheme_end + 3) {
    return std::string(uri.substr(0, slash + 1));
  }
  return std::string(uri.substr(0, slash));
}

// ---- registry ------------------------------------------------------------------------

FileSystemRegistry& FileSystemRegistry::Default() {
  static FileSystemRegistry* registry = [] {
    auto* r = new FileSystemRegistry();
    auto local = [](const std::string& authority) -> Result<std::shared_ptr<FileSystem>> {
      if (!authority.empty() && authority != "localhost") {
        return Status::InvalidArgument("file:// URIs name no host (got '" + authority +
                                       "'); write file:///path");
      }
      return MakeLocalFileSystem();
    };
    r->Register("", local);
    r->Register("file", local);
    r->Register("hdfs", MakeHdfsFileSystem);
    r->Register("s3", MakeS3FileSystem);
    r->Register("s3a", MakeS3FileSystem);
    return r;
  }();
  return *registry;
}

void FileSystemRegistry::Register(const std::string& scheme, FileSystemFactory factory) {
  std::lock_guard<std::mutex> lock(mu_);
  factories_[scheme] = std::move(factory);
  std::erase_if(cache_, [&](const auto& kv) { return kv.first.starts_with(scheme + "://"); });
}

void FileSystemRegistry::Unregister(const std::string& scheme) {
  std::lock_guard<std::mutex> lock(mu_);
  factories_.erase(scheme);
  std::erase_if(cache_, [&](const auto& kv) { return kv.first.starts_with(scheme + "://"); });
}

std::vector<std::string> FileSystemRegistry::Schemes() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [scheme, _] : factories_) {
    if (!scheme.empty()) out.push_back(scheme + "://");
  }
  return out;
}

Result<std::shared_ptr<FileSystem>> FileSystemRegistry::ForUri(const std::string& uri) {
  ASSIGN_OR_RETURN(UriParts parts, ParseUri(uri));
  const std::string key = parts.scheme + "://" + parts.authority;
  FileSystemFactory factory;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const int pid = static_cast<int>(::getpid());
    if (pid != cache_pid_) {
      // Inherited through fork(): remote clients' threads are gone. Leak, never free,
      // what the parent made (freeing could wait on those threads).
      for (auto& [_, fs] : cache_) new std::shared_ptr<FileSystem>(std::move(fs));
      cache_.clear();
      cache_pid_ = pid;
    }
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    auto f = factories_.find(parts.scheme);
    if (f == factories_.end()) {
      std::string known;
      for (const auto& [scheme, _] : factories_) {
        if (scheme.empty()) continue;
        known += (known.empty() ? "" : ", ") + scheme + "://";
      }
      return Status::InvalidArgument(uri + ": unknown filesystem scheme '" + parts.scheme +
                                     "://'; supported: " + known + " and local paths");
    }
    factory = f->second;
  }
  // Made outside the lock: a remote client may take a while to set up.
  ASSIGN_OR_RETURN(std::shared_ptr<FileSystem> fs, factory(parts.authority));
  std::lock_guard<std::mutex> lock(mu_);
  auto [it, inserted] = cache_.emplace(key, fs);
  return it->second;
}

// ---- convenience -----------------------------------------------------------------------

namespace {
Result<std::shared_ptr<FileSystem>> FsFor(const std::string& uri) {
  return FileSystemRegistry::Default().ForUri(uri);
}
}  // namespace

Result<std::unique_ptr<RandomAccessFile>> OpenInputFile(const std::string& uri) {
  ASSIGN_OR_RETURN(auto fs, FsFor(uri));
  return fs->OpenForRead(uri);
}

Result<std::unique_ptr<WritableFile>> OpenOutputFile(const std::string& uri,
                                                     const WriteOptions& options) {
  ASSIGN_OR_RETURN(auto fs, FsFor(uri));
  return fs->OpenForWrite(uri, options);
}

Result<std::unique_ptr<WritableFile>> OpenStreamingOutputFile(const std::string& uri) {
  ASSIGN_OR_RETURN(auto fs, FsFor(uri));
  return fs->OpenForStreamingWrite(uri);
}

Result<FileInfo> StatPath(const std::string& uri) {
  ASSIGN_OR_RETURN(auto fs, FsFor(uri));
  return fs->Stat(uri);
}

Result<bool> PathExists(const std::string& uri) {
  auto st = StatPath(uri);
  if (st.ok()) return true;
  if (st.status().code() == StatusCode::kNotFound) return false;
  return st.status();
}

Result<std::vector<FileInfo>> ListDir(const std::string& uri) {
  ASSIGN_OR_RETURN(auto fs, FsFor(uri));
  return fs->ListDir(uri);
}

Status MakeDirs(const std::string& uri) {
  ASSIGN_OR_RETURN(auto fs, FsFor(uri));
  return fs->MakeDirs(uri);
}

Status DeletePath(const std::string& uri, bool recursive) {
  ASSIGN_OR_RETURN(auto fs, FsFor(uri));
  return fs->Delete(uri, recursive);
}

Status RenamePath(const std::string& from, const std::string& to) {
  ASSIGN_OR_RETURN(auto fs, FsFor(from));
  ASSIGN_OR_RETURN(auto to_fs, FsFor(to));
  if (fs != to_fs) {
    return Status::InvalidArgument("rename " + from + " to " + to +
                                   ": not on the same filesystem");
  }
  return fs->Rename(from, to);
}

// ---- glob ------------------------------------------------------------------------------

bool HasGlobChars(std::string_view uri) {
  return uri.find_first_of("*?[") != std::string_view::npos;
}

namespace {

std::vector<std::string> SplitComponents(std::string_view path) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < path.size()) {
    const size_t j = path.find('/', i);
    const size_t end = j == std::string_view::npos ? path.size() : j;
    if (end > i) out.emplace_back(path.substr(i, end - i));
    i = end + 1;
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> Glob(const std::string& pattern) {
  if (!HasGlobChars(pattern)) {
    ASSIGN_OR_RETURN(bool exists, PathExists(pattern));
    if (!exists) return std::vector<std::string>{};
    return std::vector<std::string>{pattern};
  }
  ASSIGN_OR_RETURN(UriParts parts, ParseUri(pattern));
  ASSIGN_OR_RETURN(auto fs, FsFor(pattern));
  // The fixed part before the first wildcard component is the root of the search.
  std::string root;
  if (!parts.scheme.empty()) root = parts.scheme + "://" + parts.authority;
  const bool absolute = parts.path.starts_with('/');
  std::vector<std::string> comps = SplitComponents(parts.path);
  size_t first_wild = 0;
  std::string base = root + (absolute ? "/" : "");
  while (first_wild < comps.size() && !HasGlobChars(comps[first_wild])) {
    base = base.empty() ? comps[first_wild] : JoinUri(base, comps[first_wild]);
    ++first_wild;
  }
  if (base.empty()) base = ".";
  std::vector<std::string> current{base};
  for (size_t c = first_wild; c < comps.size(); ++c) {
    const bool last = c + 1 == comps.size();
    std::vector<std::string> next;
    for (const auto& dir : current) {
      if (!HasGlobChars(comps[c])) {
        std::string child = JoinUri(dir, comps[c]);
        ASSIGN_OR_RETURN(bool exists, PathExists(child));
        if (exists) next.push_back(std::move(child));
        continue;
      }
      auto listing = fs->ListDir(dir);
      if (!listing.ok()) {
        const StatusCode code = listing.status().code();
        // A parent that is missing or a file matches nothing, as in a shell.
        if (code == StatusCode::kNotFound || code == StatusCode::kInvalidArgument) continue;
        return listing.status();
      }
      for (const auto& entry : *listing) {
        const std::string name(UriBaseName(entry.uri));
        if (!last && !entry.is_dir) continue;
        if (::fnmatch(comps[c].c_str(), name.c_str(), 0) == 0) {
          next.push_back(JoinUri(dir, name));
        }
      }
    }
    current = std::move(next);
  }
  std::sort(current.begin(), current.end());
  return current;
}

}  // namespace sparktf

namespace sparktf {

Result<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) {
    if (HasGlobChars(p)) {
      ASSIGN_OR_RETURN(auto matches, Glob(p));
      if (matches.empty()) return Status::NotFound(p + ": no file matches the pattern");
      for (auto& m : matches) {
        const std::string_view name = UriBaseName(m);
        if (!name.empty() && name[0] != '.' && name[0] != '_') out.push_back(std::move(m));
      }
      continue;
    }
    ASSIGN_OR_RETURN(FileInfo info, StatPath(p));
    if (!info.is_dir) {
      out.push_back(p);
      continue;
    }
    ASSIGN_OR_RETURN(auto entries, ListDir(p));
    std::vector<std::string> files;
    for (auto& e : entries) {
      const std::string_view name = UriBaseName(e.uri);
      if (e.is_dir || name.empty() || name[0] == '.' || name[0] == '_') continue;
      files.push_back(std::move(e.uri));
    }
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

}  // namespace sparktf
