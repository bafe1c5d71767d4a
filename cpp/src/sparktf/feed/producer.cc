#include "sparktf/feed/producer.h"

#include <sys/mman.h>

#include <cstring>

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

Status PartitionFeed::WithDrain(const std::function<Status(milliseconds)>& attempt,
                                milliseconds timeout) {
  if (!results_) return ClassifyConsumerStop(attempt(timeout));
  auto deadline = Clock::now() + timeout;
  while (true) {
    Status st = attempt(kDrainSlice);
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

Status PartitionFeed::PushMessage(MessageParts message, milliseconds timeout) {
  // The batch lands aligned in the ring, so the reader can hand out its columns in place.
  const size_t align_at = message.empty() ? 0 : BatchStart(message[0]);
  return WithDrain([&](milliseconds t) { return input_->Push(message, t, align_at); }, timeout);
}

std::string PartitionFeed::TagFor() const {
  if (results_ || feed_ == 0) return {};
  return EncodeTag(BatchTag{feed_, partition_, rows_pushed_});
}

Status PartitionFeed::Push(MessageParts batch, milliseconds timeout) {
  if (batch.empty()) return Status::InvalidArgument("empty feed batch");
  ASSIGN_OR_RETURN(uint64_t rows, BatchRows(batch[0]));  // the header comes first
  const std::string tag = TagFor();
  if (tag.empty()) {
    RETURN_NOT_OK(PushMessage(batch, timeout));
  } else {
    std::vector<std::string_view> tagged;
    tagged.reserve(batch.size() + 1);
    tagged.push_back(tag);
    tagged.insert(tagged.end(), batch.begin(), batch.end());
    RETURN_NOT_OK(PushMessage(tagged, timeout));
  }
  rows_pushed_ += rows;
  return Status::OK();
}

Status PartitionFeed::PushFilled(size_t size, const Fill& fill, milliseconds timeout) {
  const std::string tag = TagFor();
  RingReservation space;
  RETURN_NOT_OK(WithDrain(
      [&](milliseconds t) -> Status {
        ASSIGN_OR_RETURN(space, input_->Reserve(tag.size() + size, t, tag.size()));
        return Status::OK();
      },
      timeout));
  const std::span<char> bytes = space.bytes();
  if (!tag.empty()) std::memcpy(bytes.data(), tag.data(), tag.size());
  const std::span<char> batch = bytes.subspan(tag.size());
  RETURN_NOT_OK(fill(batch));  // on error, `space` is given up as it goes
  ASSIGN_OR_RETURN(uint64_t rows, BatchRows(std::string_view(batch.data(), batch.size())));
  RETURN_NOT_OK(ClassifyConsumerStop(space.Commit()));
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
