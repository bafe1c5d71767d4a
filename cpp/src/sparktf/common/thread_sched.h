// Linux scheduling policies of this process's threads: feeding work that yields to
// training on shared cores (docs/architecture.md, "Feeding beside training").
#pragma once

#include <sys/types.h>

#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "sparktf/common/result.h"

namespace sparktf {

// The policies used here. kBatch: a fair share of the cores, but a waking thread does not
// preempt the one running (the tick does). Any thread may move between kOther and kBatch
// at its nice value; that is what keeps this reversible without privileges (SCHED_IDLE,
// which would give more, cannot be left without CAP_SYS_NICE).
enum class SchedPolicy { kOther, kBatch, kIdle, kUnknown };

// Thread `tid` of this process (0: the calling thread).
Result<SchedPolicy> ThreadPolicy(pid_t tid = 0);
// Sets thread `tid` (0: the calling thread) to `policy` (kOther, kBatch or kIdle), its nice
// value kept.
Status SetThreadPolicy(pid_t tid, SchedPolicy policy);
// The ids of this process's threads whose names (/proc/self/task/TID/comm, at most 15
// characters) begin with one of `prefixes`.
std::vector<pid_t> ThreadsNamed(const std::vector<std::string>& prefixes);

// Feeding threads yielding to training. While at least one Guard lives, the thread of
// each Guard and this process's threads named by `background` (the JVM's JIT compilers)
// run at kBatch; when a Guard ends, its thread returns to kOther, and the last one also
// returns the background threads to kOther (those made meanwhile, which inherit kBatch,
// included). Threads at another policy than kOther when a Guard starts are left as they
// are. Thread-safe.
class SchedYield {
 public:
  explicit SchedYield(std::vector<std::string> background) : background_(std::move(background)) {}
  SchedYield(const SchedYield&) = delete;
  SchedYield& operator=(const SchedYield&) = delete;

  // Destroyed on the thread that made it.
  class Guard {
   public:
    Guard(Guard&& o) noexcept : owner_(std::exchange(o.owner_, nullptr)), moved_(o.moved_) {}
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;
    Guard& operator=(Guard&&) = delete;
    ~Guard();
    // Whether the calling thread was moved to kBatch.
    bool yielded() const { return moved_; }

   private:
    friend class SchedYield;
    Guard(SchedYield* owner, bool moved) : owner_(owner), moved_(moved) {}
    SchedYield* owner_;
    bool moved_;
  };

  // The calling thread (and, for the first Guard, the background threads) to kBatch.
  // A move the kernel refuses is skipped: the work then runs as it would have.
  Guard Enter();
  // How many background threads the Guards alive moved (tests, stats).
  size_t background_moved() const;

 private:
  void Leave();

  const std::vector<std::string> background_;
  mutable std::mutex mu_;
  int guards_ = 0;                  // guarded by mu_
  std::vector<pid_t> left_alone_;   // guarded by mu_: background threads not at kOther
  size_t moved_ = 0;                // guarded by mu_
};

}  // namespace sparktf
