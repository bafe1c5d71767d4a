// The consumer side of a node's input ring (the TF process): batches of the
// size the model asks for, partition bookkeeping for inference results, and
// lockstep end of data for synchronous training (docs/architecture.md).
//
// Lockstep rule: with `sync` set, batch s (of n rows) is handed out only when
// every worker has had at least s*n rows delivered, or when every worker's
// feed is closed and s*n <= the smallest total. Otherwise the feed ends here
// on every worker at the same step, and the rows left over are dropped and
// counted. While it waits, the reader keeps draining its ring so that feeding
// tasks always finish (they may hold every Spark task slot).
//
// A feeding task that dies mid-partition is not fatal: Spark retries it. For
// training, its rows already delivered stay, and the retry's (or a speculative
// copy's) batches are tagged (BatchTag), so the reader drops every row of a
// (feed, partition) below what it has already taken in: each row is delivered
// once. An inference partition it left open is abandoned, and results for it
// are dropped.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "sparktf/common/result.h"
#include "sparktf/feed/ring.h"
#include "sparktf/feed/stream.h"

namespace sparktf::feed {

struct FeedProgress {
  uint64_t delivered = 0;  // rows popped from the ring so far
  bool closed = false;     // the ring's input is closed and drained
  uint64_t consumed = 0;   // rows handed out
  uint64_t dropped = 0;    // rows dropped at the end to stay in step
  bool finished = false;   // this reader will hand out nothing more
  uint64_t producers_lost = 0;  // feeding tasks that died mid-partition
  uint64_t duplicates = 0;  // rows dropped: an earlier attempt of their task delivered them
  uint64_t batches = 0;     // batches handed out
  uint64_t wait_us = 0;     // time Next spent before it had a batch to hand out (input stall)
  double ring_fill = 0;     // share of the input ring in use, at the last report
  uint64_t in_place = 0;    // messages read in place (held in the ring until let go)
  uint64_t copied = 0;      // messages copied out (not aligned by their producer)
  uint64_t evictions = 0;   // times held messages moved out of the ring (Ring::PopHeld)
};

struct Watermark {
  uint64_t min_delivered = 0;  // over every worker
  bool all_closed = false;
};

// Reports this reader's progress and returns the workers' watermark.
using LockstepSync = std::function<Result<Watermark>(const FeedProgress&)>;

// How often a reader with a coordinator reports its progress while it reads, and it does
// whenever it runs dry (the driver uses it to know what a failed node had taken:
// TFCluster's re-feed after a restart).
constexpr std::chrono::milliseconds kProgressReportInterval{1000};

class FeedReader {
 public:
  // Takes the input ring (created by this process). `sync` may be empty
  // (no lockstep, no progress reports).
  FeedReader(std::unique_ptr<Ring> input, LockstepSync sync);
  ~FeedReader();

  // The next batch, or nullopt at the end of the feed: a view of the message it
  // came in when its rows lie in one (no copy), else copied once into a pooled
  // buffer. A message is read in place, its ring space held until the last view
  // of it goes, within the ring's hold limit; past it, into a pooled buffer. exact: exactly n rows
  // (a short tail is dropped and counted; with lockstep, always exact);
  // otherwise up to n rows, fewer only at the end of the feed or of an
  // inference partition (a batch never spans two partitions).
  // DeadlineExceeded when no row arrived for `timeout`.
  Result<std::optional<BatchSlice>> NextSlice(uint64_t n, bool exact,
                                              std::chrono::milliseconds timeout);
  // NextSlice's rows as one encoded batch (a copy).
  Result<std::optional<std::string>> Next(uint64_t n, bool exact, std::chrono::milliseconds timeout);
  // Inference: results for the oldest rows handed out and not yet answered.
  Status PushResults(std::string_view batch, std::chrono::milliseconds timeout);
  // Stops reading on purpose: producers skip the rest of their data. May be called from
  // another thread while Next/PeekSchema wait (TFoS's terminate() from the training loop
  // while a tf.data generator reads): they return the end of the feed within ~100 ms,
  // and Terminate returns once they have.
  void Terminate();
  // Stops because of an error: producers fail with `reason`. Any thread; a waiting
  // Next/PeekSchema returns the end of the feed.
  void Fail(const std::string& reason);

  // Columns of the first batch, waiting for it if needed (for a schema);
  // nullopt if the feed ended without any row.
  Result<std::optional<std::vector<ColumnView>>> PeekSchema(std::chrono::milliseconds timeout);

  // A snapshot, from any thread (as of the reading thread's last step).
  FeedProgress progress() const;
  bool lockstep() const { return static_cast<bool>(sync_); }

 private:
  // Pops one message (waiting at most `wait`); false if none came.
  Result<bool> PopOne(std::chrono::milliseconds wait);
  Status FinishPartition();
  // Adds the rows that no earlier attempt delivered of the tagged batch `message`.
  Status AddTagged(std::shared_ptr<const void> owner, std::string_view message);
  // Drops the open inference partition (its producer is gone).
  void Abandon(const std::string& why);
  Status Report();
  // The share of the input ring in use now.
  double RingFill() const;
  // Sends the progress (unless unchanged, or reported less than min_interval ago).
  void ReportProgress(std::chrono::milliseconds min_interval);

  // Copies progress_ for progress(). Called with mu_ held.
  void Publish();
  Result<std::optional<BatchSlice>> NextLocked(uint64_t n, bool exact,
                                               std::chrono::milliseconds timeout);
  Status PushResultsLocked(std::string_view batch, std::chrono::milliseconds timeout);
  Result<std::optional<std::vector<ColumnView>>> PeekSchemaLocked(std::chrono::milliseconds timeout);

  // mu_: held by Next, PeekSchema, PushResults and Terminate (one reading thread at a
  // time); stop_ tells a waiting reader to give up; published_ is progress() across threads.
  std::mutex mu_;
  std::atomic<bool> stop_{false};
  mutable std::mutex published_mu_;
  FeedProgress published_;
  std::unique_ptr<Ring> input_;
  LockstepSync sync_;
  BufferPool pool_{16};  // messages popped, and batches assembled across them
  BatchAssembler rows_;
  FeedProgress progress_;
  uint64_t allowed_ = 0;  // rows every worker is known to have
  std::chrono::steady_clock::time_point last_report_{};
  uint64_t reported_taken_ = 0;
  // Rows delivered so far of each (feed, partition) of tagged batches.
  std::map<std::pair<uint64_t, int64_t>, uint64_t> tagged_rows_;
  // Inference partition state.
  std::unique_ptr<Ring> results_;
  int64_t partition_ = -1;
  bool partition_ended_ = false;  // its end marker was read
  uint64_t partition_rows_ = 0;   // from the end marker
  uint64_t partition_out_ = 0;    // rows handed out
  uint64_t partition_answered_ = 0;
  bool partition_abandoned_ = false;  // its producer died; results are dropped
};

}  // namespace sparktf::feed
