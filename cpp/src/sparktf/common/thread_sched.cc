#include "sparktf/common/thread_sched.h"

#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <string>

namespace sparktf {
namespace {

pid_t Tid(pid_t tid) { return tid == 0 ? static_cast<pid_t>(::syscall(SYS_gettid)) : tid; }

int LinuxPolicy(SchedPolicy p) {
  switch (p) {
    case SchedPolicy::kBatch: return SCHED_BATCH;
    case SchedPolicy::kIdle: return SCHED_IDLE;
    default: return SCHED_OTHER;
  }
}

}  // namespace

Result<SchedPolicy> ThreadPolicy(pid_t tid) {
  const int p = ::sched_getscheduler(Tid(tid));
  if (p < 0) return Status::FromErrno("sched_getscheduler of thread " + std::to_string(tid), errno);
  switch (p) {
    case SCHED_OTHER: return SchedPolicy::kOther;
    case SCHED_BATCH: return SchedPolicy::kBatch;
    case SCHED_IDLE: return SchedPolicy::kIdle;
    default: return SchedPolicy::kUnknown;
  }
}

Status SetThreadPolicy(pid_t tid, SchedPolicy policy) {
  if (policy == SchedPolicy::kUnknown) {
    return Status::InvalidArgument("SetThreadPolicy: no policy given");
  }
  const sched_param param{0};
  if (::sched_setscheduler(Tid(tid), LinuxPolicy(policy), &param) != 0) {
    return Status::FromErrno("sched_setscheduler of thread " + std::to_string(tid), errno);
  }
  return Status::OK();
}

std::vector<pid_t> ThreadsNamed(const std::vector<std::string>& prefixes) {
  std::vector<pid_t> out;
  DIR* dir = ::opendir("/proc/self/task");
  if (!dir) return out;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream comm(std::string("/proc/self/task/") + e->d_name + "/comm");
    std::string name;
    if (!std::getline(comm, name)) continue;  // the thread ended
    for (const auto& p : prefixes) {
      if (name.starts_with(p)) {
        out.push_back(static_cast<pid_t>(std::stol(e->d_name)));
        break;
      }
    }
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

SchedYield::Guard SchedYield::Enter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (guards_++ == 0) {
      left_alone_.clear();
      for (pid_t t : ThreadsNamed(background_)) {
        auto p = ThreadPolicy(t);
        if (!p.ok()) continue;  // the thread ended
        if (*p != SchedPolicy::kOther || !SetThreadPolicy(t, SchedPolicy::kBatch).ok()) {
          left_alone_.push_back(t);
        } else {
          ++moved_;
        }
      }
    }
  }
  auto self = ThreadPolicy(0);
  const bool moved = self.ok() && *self == SchedPolicy::kOther &&
                     SetThreadPolicy(0, SchedPolicy::kBatch).ok();
  return Guard(this, moved);
}

void SchedYield::Leave() {
  std::lock_guard<std::mutex> lock(mu_);
  if (--guards_ > 0) return;
  for (pid_t t : ThreadsNamed(background_)) {
    if (std::binary_search(left_alone_.begin(), left_alone_.end(), t)) continue;
    auto p = ThreadPolicy(t);
    if (p.ok() && *p == SchedPolicy::kBatch) (void)SetThreadPolicy(t, SchedPolicy::kOther);
  }
  moved_ = 0;
}

size_t SchedYield::background_moved() const {
  std::lock_guard<std::mutex> lock(mu_);
  return moved_;
}

SchedYield::Guard::~Guard() {
  if (!owner_) return;
  if (moved_) (void)SetThreadPolicy(0, SchedPolicy::kOther);
  owner_->Leave();
}

}  // namespace sparktf
