// A feeding task's side of InputMode.SPARK, shared by its two runners: the PySpark
// feeding tasks (python/sparktf/feeding.py, through sparktf._native) and the JVM
// feeder (jvm/, through libsparktf_jni): which node a partition goes to, why a node
// is gone, and a DataFrame partition's Arrow batches pushed to that node.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sparktf/common/net.h"
#include "sparktf/common/thread_sched.h"
#include "sparktf/feed/arrow_feed.h"
#include "sparktf/node/feed_service.h"

namespace sparktf::node {

// (executor id, host): the node that partition `partition` of feeding job `feed`
// (of `partitions`) goes to, chosen by the coordinator for this task's host
// (docs/protocol.md, FEED_ASSIGN), and that host: the address this process reaches
// the coordinator from, bound to SPARK_LOCAL_IP when set.
Result<std::pair<int, std::string>> AssignFeedTarget(const HostPort& coordinator,
                                                     const std::string& token, uint64_t feed,
                                                     int64_t partition, int64_t partitions,
                                                     int generation,
                                                     std::chrono::milliseconds timeout);

// The coordinator's account of node `executor_id` after a feed to it failed:
// nullopt while it runs (or nothing is known), "" when it finished cleanly (it reads no
// more: skip its rows), else why it is gone (the cluster was aborted, it exited or was
// lost, with its traceback; the coordinator is unreachable).
std::optional<std::string> NodeFailure(const HostPort& coordinator, const std::string& token,
                                       int executor_id, std::chrono::milliseconds timeout);

// What a feeding job's tasks know (TFCluster._feed_meta as JSON; keys there).
struct FeedJob {
  struct Target {
    int executor_id = 0;
    std::string host;
    int feed_port = 0;
    int feed_index = 0;
    std::string job_name;
    int task_index = 0;
  };
  std::string cluster_id, token, qname, coordinator;
  uint64_t feed_id = 0;
  std::chrono::milliseconds timeout{600000};
  std::vector<Target> targets;
  int generation = 0;
  int64_t partitions = 0;   // 0: placement by modulo
  bool modulo = false;      // placement "modulo": partition i -> targets[i mod W]
  bool force_tcp = false;   // transport "tcp"
  // feeder_sched "batch" (the default; "normal": off): a JVM feeding task's thread, and
  // its JVM's JIT compilers while it feeds, at SCHED_BATCH (JvmFeedYield)
  bool yield_to_training = true;
  static Result<FeedJob> Parse(std::string_view json);
};

// A feeding task's session to its partition's node: the node chosen for this task's host
// by the coordinator (FEED_ASSIGN), or node partition mod W with placement "modulo" or
// no partition count; shared memory when that node is on this host, TCP otherwise.
struct PartitionSession {
  int64_t partition = 0;
  FeedJob::Target target;
  std::unique_ptr<FeedSession> session;  // null: the node finished reading; skip the rows
  // "feeding partition P to node E (job:task on host)".
  std::string Describe() const;
  // `st` in that context.
  Status WithNode(const Status& st) const { return st.WithContext(Describe()); }
  // Converts `batch` into feed messages with `feeder` and pushes them to `session`
  // (not null); `*pushed` counts the rows pushed. Cancelled when the consumer stopped
  // reading on purpose; other errors are the session's or the conversion's, unadorned.
  Status PushArrow(feed::ArrowFeeder& feeder, const ArrowSchema& schema,
                   const ArrowArray& batch, uint64_t* pushed) const;
};

// Opens partition `partition`'s session. When its node has finished reading, a training
// task gets a PartitionSession without a session (its rows are skipped) and an inference
// task an Aborted error (its rows would have no result). Errors name the partition, and
// the node once chosen; a node that is gone is said to be, with the coordinator's reason.
Result<PartitionSession> OpenPartitionSession(const FeedJob& job, int64_t partition,
                                              bool inference);

// One DataFrame partition fed from Arrow record batches (the JVM feeder's task).
class ArrowPartitionFeed {
 public:
  // Chooses the partition's node and opens its session. When that node has finished
  // reading, the feed is open but stopped(): its rows are skipped. Errors name the
  // partition and node.
  static Result<std::unique_ptr<ArrowPartitionFeed>> Open(const FeedJob& job, int64_t partition);
  // Pushes every row of `batch`; returns how many were pushed (fewer once the consumer
  // stopped reading on purpose: then stopped() and the rest is skipped).
  Result<uint64_t> Push(const ArrowSchema& schema, const ArrowArray& batch);
  // The partition is complete. A consumer that stopped reading is not an error (the
  // feed is then stopped()); over TCP it may be learnt only here, after rows that Push
  // counted went to the agent and were skipped there.
  Status Finish();
  bool stopped() const { return stopped_; }
  bool local() const { return s_.session && s_.session->local(); }
  int feed_index() const { return s_.target.feed_index; }
  // Whether this task's thread runs at SCHED_BATCH while it feeds (FeedJob::yield_to_training).
  bool yielded() const { return yield_ && yield_->yielded(); }

 private:
  ArrowPartitionFeed(PartitionSession s, std::optional<SchedYield::Guard> yield)
      : yield_(std::move(yield)), s_(std::move(s)), stopped_(s_.session == nullptr) {}

  std::optional<SchedYield::Guard> yield_;  // ends last: the session closes at SCHED_BATCH
  PartitionSession s_;
  bool stopped_;  // the node reads no more: skip the rest
  feed::ArrowFeeder feeder_;
};

// The JVM feeder's yield (FeedJob::yield_to_training): its background threads are
// HotSpot's JIT compilers ("C1 CompilerThread0", ...) and OpenJ9's ("JIT Compilation
// Thread-0"); one per process. A JVM feeding task makes its guard on its own thread, in
// ArrowPartitionFeed::Open, and ends it there, when the feed is closed.
SchedYield& JvmFeedYield();

}  // namespace sparktf::node
