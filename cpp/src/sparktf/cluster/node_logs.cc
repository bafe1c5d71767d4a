#include "sparktf/cluster/node_logs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace sparktf::cluster {
namespace {

// write(2) until done; false on an error (errno says which).
bool WriteFully(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

}  // namespace

std::string NodeLogs::PathOf(const std::string& node, int generation) const {
  if (options_.dir.empty()) return "";
  std::string name = node;
  for (char& c : name) {
    if (c == ':' || c == '/') c = '-';
  }
  if (generation > 0) name += ".gen" + std::to_string(generation);
  return options_.dir + "/" + name + ".log";
}

void NodeLogs::Write(const Effects::Output& line) {
  const std::string text = line.text + "\n";
  if (options_.echo_fd >= 0) {
    (void)WriteFully(options_.echo_fd, "[" + line.node + "] " + text);
  }
  if (options_.dir.empty()) return;
  const std::string path = PathOf(line.node, line.generation);
  auto it = files_.find(path);
  if (it == files_.end()) {
    if (::mkdir(options_.dir.c_str(), 0755) != 0 && errno != EEXIST && last_error_.empty()) {
      last_error_ = "mkdir " + options_.dir + ": " + std::strerror(errno);
    }
    UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (!fd.valid() && last_error_.empty()) {
      last_error_ = "open " + path + ": " + std::strerror(errno);
    }
    it = files_.emplace(path, std::move(fd)).first;
  }
  if (!it->second.valid()) return;
  if (!WriteFully(it->second.get(), text) && last_error_.empty()) {
    last_error_ = "write " + path + ": " + std::strerror(errno);
  }
}

}  // namespace sparktf::cluster
