#include "sparktf/common/files.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

namespace sparktf {

Result<std::vector<std::string>> ExpandPaths(const std::vector<std::string>& paths) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  for (const auto& p : paths) {
    std::error_code ec;
    const auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) return Status::NotFound(p + ": no such file or directory");
    if (!fs::is_directory(st)) {
      out.push_back(p);
      continue;
    }
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(p, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.empty() || name[0] == '.' || name[0] == '_') continue;
      if (entry.is_regular_file(ec)) files.push_back(entry.path().string());
    }
    if (ec) return Status::IOError("list " + p + ": " + ec.message());
    std::sort(files.begin(), files.end());
    out.insert(out.end(), files.begin(), files.end());
  }
  return out;
}

}  // namespace sparktf
