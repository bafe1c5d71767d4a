#include "sparktf/common/thread_sched.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <memory>
#include <thread>
#include <vector>

namespace sparktf {
namespace {

pid_t Gettid() { return static_cast<pid_t>(::syscall(SYS_gettid)); }

// A thread named `name` that waits until Stop(); its id once started.
class NamedThread {
 public:
  explicit NamedThread(const char* name) {
    thread_ = std::thread([this, name] {
      ::pthread_setname_np(::pthread_self(), name);
      std::unique_lock<std::mutex> lock(mu_);
      tid_ = Gettid();
      cv_.notify_all();
      cv_.wait(lock, [this] { return stop_; });
    });
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return tid_ != 0; });
  }
  ~NamedThread() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  pid_t tid() const { return tid_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  pid_t tid_ = 0;
  bool stop_ = false;
  std::thread thread_;
};

SchedPolicy Policy(pid_t tid) {
  auto p = ThreadPolicy(tid);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : SchedPolicy::kUnknown;
}

TEST(ThreadSched, OtherAndBatchBothWays) {
  std::thread([] {
    ASSERT_EQ(Policy(0), SchedPolicy::kOther);
    ASSERT_TRUE(SetThreadPolicy(0, SchedPolicy::kBatch).ok());
    EXPECT_EQ(Policy(0), SchedPolicy::kBatch);
    EXPECT_EQ(Policy(Gettid()), SchedPolicy::kBatch);
    ASSERT_TRUE(SetThreadPolicy(0, SchedPolicy::kOther).ok());
    EXPECT_EQ(Policy(0), SchedPolicy::kOther);
  }).join();
  EXPECT_EQ(Policy(0), SchedPolicy::kOther);  // per thread: the test's own is untouched
}

TEST(ThreadSched, ErrorsNameTheThread) {
  auto p = ThreadPolicy(999999999);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().ToString().find("999999999"), std::string::npos) << p.status().ToString();
  EXPECT_FALSE(SetThreadPolicy(0, SchedPolicy::kUnknown).ok());
}

TEST(ThreadSched, ThreadsNamedByPrefix) {
  NamedThread a("C2 CompilerThre"), b("C1 CompilerThre"), c("Executor task l");
  EXPECT_EQ(ThreadsNamed({"C2 Compiler"}), std::vector<pid_t>{a.tid()});
  auto both = ThreadsNamed({"C1 Compiler", "C2 Compiler"});
  std::vector<pid_t> want{a.tid(), b.tid()};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(both, want);
  EXPECT_TRUE(ThreadsNamed({"no such thread"}).empty());
}

TEST(ThreadSched, GuardsMoveAndRestoreTheirThreadsAndTheBackground) {
  NamedThread compiler("bgcompiler-0");
  NamedThread other("unrelated");
  SchedYield yield({"bgcompiler"});
  std::mutex mu;
  std::condition_variable cv;
  int step = 0;  // 1: the first guard is up; 2: the second ended; 3: the first may end
  std::thread first([&] {
    auto g = yield.Enter();
    EXPECT_TRUE(g.yielded());
    EXPECT_EQ(Policy(0), SchedPolicy::kBatch);
    std::unique_lock<std::mutex> lock(mu);
    step = 1;
    cv.notify_all();
    cv.wait(lock, [&] { return step == 3; });
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return step == 1; });
  }
  EXPECT_EQ(Policy(compiler.tid()), SchedPolicy::kBatch);
  EXPECT_EQ(Policy(other.tid()), SchedPolicy::kOther);
  EXPECT_EQ(yield.background_moved(), 1u);
  std::thread([&] {
    auto g = yield.Enter();
    EXPECT_TRUE(g.yielded());
  }).join();
  // another guard ended; the first still holds the background at kBatch
  EXPECT_EQ(Policy(compiler.tid()), SchedPolicy::kBatch);
  // a background thread made meanwhile inherits kBatch from its maker here
  ASSERT_TRUE(SetThreadPolicy(0, SchedPolicy::kBatch).ok());
  auto later = std::make_unique<NamedThread>("bgcompiler-1");
  ASSERT_TRUE(SetThreadPolicy(0, SchedPolicy::kOther).ok());
  EXPECT_EQ(Policy(later->tid()), SchedPolicy::kBatch);
  {
    std::lock_guard<std::mutex> lock(mu);
    step = 3;
  }
  cv.notify_all();
  first.join();
  EXPECT_EQ(Policy(compiler.tid()), SchedPolicy::kOther);
  EXPECT_EQ(Policy(later->tid()), SchedPolicy::kOther);
  EXPECT_EQ(yield.background_moved(), 0u);
}

TEST(ThreadSched, ThreadsAtAnotherPolicyAreLeftAlone) {
  NamedThread compiler("bgbatch-0");
  ASSERT_TRUE(SetThreadPolicy(compiler.tid(), SchedPolicy::kBatch).ok());
  SchedYield yield({"bgbatch"});
  std::thread([&] {
    ASSERT_TRUE(SetThreadPolicy(0, SchedPolicy::kBatch).ok());
    {
      auto g = yield.Enter();
      EXPECT_FALSE(g.yielded());  // it was at kBatch already
    }
    EXPECT_EQ(Policy(0), SchedPolicy::kBatch);
  }).join();
  EXPECT_EQ(yield.background_moved(), 0u);
  EXPECT_EQ(Policy(compiler.tid()), SchedPolicy::kBatch);  // as it was: not "restored"
}

}  // namespace
}  // namespace sparktf
