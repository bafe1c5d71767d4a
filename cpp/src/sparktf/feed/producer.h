// One producer's session on a node's input ring: a feeding task's partition
// (or, in the node agent, a remote task's stream). For inference it brackets
// the rows with partition markers, owns the partition's result ring, and
// collects every result while it pushes, so neither side can block the other.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sparktf/common/result.h"
#include "sparktf/feed/ring.h"

namespace sparktf::feed {

class PartitionFeed {
 public:
  // Attaches to `input_ring`. With a non-empty `result_ring` (inference),
  // creates that ring and announces it with a begin marker. Otherwise
  // (training), a non-zero `feed` tags every batch with (feed, partition, its
  // first row), so that the consumer drops rows that an earlier attempt of
  // this feeding task delivered (stream.h, BatchTag); feed 0 tags nothing.
  // An inference partition that was not finished is abandoned: the consumer
  // is told (an abort marker) and drops its results.
  ~PartitionFeed();

  static Result<std::unique_ptr<PartitionFeed>> Open(const std::string& input_ring,
                                                     uint64_t feed, int64_t partition,
                                                     const std::string& result_ring,
                                                     std::chrono::milliseconds timeout);

  // Pushes one encoded batch, waiting at most `timeout` for room. Cancelled
  // when the consumer stopped reading on purpose (skip the rest), Aborted
  // when it failed or died, DeadlineExceeded when it did not read in time.
  Status Push(MessageParts batch, std::chrono::milliseconds timeout);
  Status Push(std::string_view batch, std::chrono::milliseconds timeout) {
    return Push(MessageParts(&batch, 1), timeout);
  }
  // Writes `into` in full, or fails.
  using Fill = std::function<Status(std::span<char> into)>;
  // The same for a batch of `size` bytes that `fill` writes straight into the
  // ring (a frame read from a socket): the batch is not copied on the way. The
  // consumer waits for it while `fill` runs. A batch that `fill` fails to
  // write, or writes malformed, is given up (the consumer never sees it).
  Status PushFilled(size_t size, const Fill& fill, std::chrono::milliseconds timeout);
  // Train: detaches. Inference: sends the end marker and waits until a result
  // arrived for every row (at most `timeout` between results).
  Status Finish(std::chrono::milliseconds timeout);
  // Result batches received so far (moved out).
  std::vector<std::string> TakeResults();

  uint64_t rows_pushed() const { return rows_pushed_; }
  uint64_t result_rows() const { return result_rows_; }

 private:
  PartitionFeed(std::unique_ptr<Ring> input, std::unique_ptr<Ring> results, uint64_t feed,
                int64_t partition)
      : input_(std::move(input)), results_(std::move(results)), feed_(feed), partition_(partition) {}
  Status PushMessage(MessageParts message, std::chrono::milliseconds timeout);
  // The batch's tag (empty for untagged feeds) and its byte that rings align.
  std::string TagFor() const;
  // Calls attempt(slice) until it is not DeadlineExceeded: for inference, in slices
  // that drain results between them, so that neither side blocks the other.
  Status WithDrain(const std::function<Status(std::chrono::milliseconds)>& attempt,
                   std::chrono::milliseconds timeout);
  // Takes the results that are ready (waits up to `wait` for the first).
  Status DrainResults(std::chrono::milliseconds wait);

  std::unique_ptr<Ring> input_;
  std::unique_ptr<Ring> results_;  // null for training feeds
  uint64_t feed_;  // tags training batches unless 0
  int64_t partition_;
  uint64_t rows_pushed_ = 0;
  uint64_t result_rows_ = 0;
  bool finished_ = false;
  std::vector<std::string> pending_results_;
};

}  // namespace sparktf::feed
