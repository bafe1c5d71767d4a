#include "sparktf/feed/producer.h"

#include <sys/mman.h>

#include "sparktf/feed/stream.h"

namespace sparktf::feed {
namespace {
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
constexpr milliseconds kDrainSlice{20};
}  // namespace

Result<std::unique_ptr<PartitionFeed>> PartitionFeed::Open(const std::string& input_ring,
                                                           uint64_t feed_id, int64_t partition,
                                                           const std::string& result_ring,
                                                           milliseconds timeout) {
  ASSIGN_OR_RETURN(auto input, Ring::Attach(input_ring, Ring::AttachFor::kBulk));
  std::unique_ptr<Ring> results;
  if (!result_ring.empty()) {
    ::shm_unlink(result_ring.c_str());  // a stale one from a killed attempt of this task
    ASSIGN_OR_RETURN(results, Ring::Create(result_ring));
  }
  std::unique_ptr<PartitionFeed> feed(
      new PartitionFeed(std::move(input), std::move(results), feed_id, partition));
  if (feed->results_) {
    Marker begin{Marker::kBegin, partition, result_ring, 0};
    const std::string message = EncodeMarker(begin);
    const std::string_view part = message;
    RETURN_NOT_OK(feed->PushMessage(MessageParts(&part, 1), timeout));
  }
  return feed;
}

PartitionFeed::~PartitionFeed() {
  if (results_ && !finished_) {
    Marker abort{Marker::kAbort, partition_, "", 0};
    (void)input_->Push(EncodeMarker(abort), std::chrono::milliseconds{1000});
  }
}

Status PartitionFeed::PushMessage(MessageParts message, milliseconds timeout) {
  // The batch lands aligned in the ring, so the reader can hand out its columns in place.
  const size_t align_at = message.empty() ? 0 : BatchStart(message[0]);
  if (!results_) return ClassifyConsumerStop(input_->Push(message, timeout, align_at));
  auto deadline = Clock::now() + timeout;
  while (true) {
    Status st = input_->Push(message, kDrainSlice, align_at);
    if (st.code() != StatusCode::kDeadlineExceeded) return ClassifyConsumerStop(st);
    const uint64_t before = result_rows_;
    RETURN_NOT_OK(DrainResults(milliseconds{0}));
    if (result_rows_ != before) deadline = Clock::now() + timeout;  // progress
    if (Clock::now() >= deadline) {
      return Status::DeadlineExceeded("the consumer of " + input_->name() + " read nothing for " +
                                      std::to_string(timeout.count() / 1000) + " s");
    }
  }
}

Status PartitionFeed::Push(MessageParts batch, milliseconds timeout) {
  if (batch.empty()) return Status::InvalidArgument("empty feed batch");
  ASSIGN_OR_RETURN(uint64_t rows, BatchRows(batch[0]));  // the header comes first
  if (results_ || feed_ == 0) {
    RETURN_NOT_OK(PushMessage(batch, timeout));
  } else {
    const std::string tag = EncodeTag(BatchTag{feed_, partition_, rows_pushed_});
    std::vector<std::string_view> tagged;
    tagged.reserve(batch.size() + 1);
    tagged.push_back(tag);
    tagged.insert(tagged.end(), batch.begin(), batch.end());
    RETURN_NOT_OK(PushMessage(tagged, timeout));
  }
  rows_pushed_ += rows;
  return Status::OK();
}

Status PartitionFeed::DrainResults(milliseconds wait) {
  std::string message;
  while (true) {
    Status st = results_->Pop(&message, wait);
    if (st.code() == StatusCode::kDeadlineExceeded) return Status::OK();
    if (!st.ok()) return st.WithContext("results of partition " + std::to_string(partition_));
    ASSIGN_OR_RETURN(uint64_t rows, BatchRows(message));
    result_rows_ += rows;
    if (result_rows_ > rows_pushed_) {
      return Status::InvalidArgument("partition " + std::to_string(partition_) + " got " +
                                     std::to_string(result_rows_) + " results for " +
                                     std::to_string(rows_pushed_) + " rows");
    }
    pending_results_.push_back(std::move(message));
    wait = milliseconds{0};
  }
}

Status PartitionFeed::Finish(milliseconds timeout) {
  if (!results_) {
    input_->Detach();
    return Status::OK();
  }
  Marker end{Marker::kEnd, partition_, "", rows_pushed_};
  const std::string message = EncodeMarker(end);
  const std::string_view part = message;
  RETURN_NOT_OK(PushMessage(MessageParts(&part, 1), timeout));
  auto deadline = Clock::now() + timeout;
  while (result_rows_ < rows_pushed_) {
    const uint64_t before = result_rows_;
    RETURN_NOT_OK(DrainResults(kDrainSlice));
    if (result_rows_ != before) {
      deadline = Clock::now() + timeout;
      continue;
    }
    RETURN_NOT_OK(ClassifyConsumerStop(input_->ConsumerStatus()));
    if (Clock::now() >= deadline) {
      return Status::DeadlineExceeded(
          "partition " + std::to_string(partition_) + ": " + std::to_string(result_rows_) +
          " of " + std::to_string(rows_pushed_) + " results after waiting " +
          std::to_string(timeout.count() / 1000) + " s (does the consumer call batch_results?)");
    }
  }
  input_->Detach();
  finished_ = true;
  return Status::OK();
}

std::vector<std::string> PartitionFeed::TakeResults() {
  std::vector<std::string> out;
  out.swap(pending_results_);
  return out;
}

}  // namespace sparktf::feed
