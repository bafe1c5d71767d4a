#include "sparktf/feed/consumer.h"

#include <iostream>
#include <thread>

namespace sparktf::feed {
namespace {
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
constexpr milliseconds kSyncInterval{50};
constexpr milliseconds kWaitSlice{20};
}  // namespace

FeedReader::FeedReader(std::unique_ptr<Ring> input, LockstepSync sync)
    : input_(std::move(input)), sync_(std::move(sync)) {}

FeedReader::~FeedReader() {
  if (input_) input_->CloseConsumer(std::string(kConsumerDoneReason));
}

void FeedReader::Terminate() {
  stop_.store(true);
  input_->CloseConsumer(std::string(kConsumerDoneReason));
  std::lock_guard<std::mutex> lock(mu_);  // a waiting Next sees stop_ and returns
  progress_.finished = true;
  progress_.dropped += rows_.Clear();
  if (sync_) (void)sync_(progress_);
  Publish();
}

void FeedReader::Fail(const std::string& reason) {
  stop_.store(true);
  input_->CloseConsumer(reason);
}

FeedProgress FeedReader::progress() const {
  std::lock_guard<std::mutex> lock(published_mu_);
  return published_;
}

void FeedReader::Publish() {
  progress_.evictions = input_->stats().evictions;
  std::lock_guard<std::mutex> lock(published_mu_);
  published_ = progress_;
}

Result<std::optional<std::string>> FeedReader::Next(uint64_t n, bool exact, milliseconds timeout) {
  ASSIGN_OR_RETURN(std::optional<BatchSlice> slice, NextSlice(n, exact, timeout));
  if (!slice) return std::optional<std::string>{};
  std::string out;
  RETURN_NOT_OK(EncodeSlice(*slice, &out));
  return std::optional<std::string>(std::move(out));
}

Result<std::optional<BatchSlice>> FeedReader::NextSlice(uint64_t n, bool exact,
                                                        milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto start = Clock::now();
  auto out = NextLocked(n, exact, timeout);
  progress_.wait_us += static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count());
  if (out.ok() && out->has_value()) ++progress_.batches;
  Publish();
  return out;
}

Status FeedReader::PushResults(std::string_view batch, milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  return PushResultsLocked(batch, timeout);
}

Result<std::optional<std::vector<ColumnView>>> FeedReader::PeekSchema(milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  auto out = PeekSchemaLocked(timeout);
  Publish();
  return out;
}

Result<bool> FeedReader::PopOne(milliseconds wait) {
  // A batch is handed out in place when the ring's hold limit allows, else copied to a
  // pooled buffer; either way it lies at a 64-byte aligned address, so its payloads are
  // aligned as TensorFlow's tensors need and the op can hand them over without a copy.
  HeldMessage held;
  Status st = input_->PopHeld(&held, wait, &pool_, &BatchStart);
  const std::string_view message = held.bytes;
  if (st.ok()) ++(held.in_place ? progress_.in_place : progress_.copied);
  if (st.code() == StatusCode::kDeadlineExceeded) return false;
  if (st.code() == StatusCode::kOutOfRange) {
    progress_.closed = true;
    return false;
  }
  if (st.code() == StatusCode::kAborted && st.message().find(kProducerDied) != std::string::npos) {
    ++progress_.producers_lost;
    std::cerr << "sparktf: " << st.message() << "; Spark retries its partition\n";
    if (results_) Abandon("its feeding task died");
    return true;
  }
  RETURN_NOT_OK(st);
  if (IsMarker(message)) {
    ASSIGN_OR_RETURN(Marker m, DecodeMarker(message));
    const bool current = partition_ == m.partition && (results_ || partition_abandoned_);
    if (m.kind == Marker::kBegin) {
      // Inference partitions are served one at a time: a new one means the
      // producer of the open one is gone.
      if (results_) Abandon("partition " + std::to_string(m.partition) + " began");
      if (partition_abandoned_) progress_.dropped += rows_.Clear();
      partition_ = m.partition;
      partition_ended_ = false;
      partition_abandoned_ = false;
      partition_out_ = partition_answered_ = 0;
      auto results = Ring::Attach(m.result_ring);
      if (results.ok()) {
        results_ = std::move(*results);
      } else {  // its feeding task is already gone
        Abandon(results.status().message());
      }
    } else if (m.kind == Marker::kAbort) {
      if (current && results_) Abandon("its feeding task gave up");
      if (current) progress_.dropped += rows_.Clear();
    } else if (current && results_) {
      partition_ended_ = true;
      partition_rows_ = m.rows;
    } else if (!current) {
      return Status::Internal("end marker of partition " + std::to_string(m.partition) +
                              " without its begin");
    }
    return true;
  }
  if (IsTagged(message)) {
    RETURN_NOT_OK(AddTagged(std::move(held.owner), message));
    return true;
  }
  ASSIGN_OR_RETURN(uint64_t rows, BatchRows(message));
  RETURN_NOT_OK(rows_.Add(std::move(held.owner), message, 0));
  progress_.delivered += rows;
  return true;
}

Status FeedReader::AddTagged(std::shared_ptr<const void> owner, std::string_view message) {
  ASSIGN_OR_RETURN(BatchTag tag, DecodeTag(message));
  ASSIGN_OR_RETURN(uint64_t rows, BatchRows(message.substr(kTagSize)));
  uint64_t& have = tagged_rows_[{tag.feed, tag.partition}];
  if (tag.first_row > have) {
    return Status::DataLoss("feed batch of partition " + std::to_string(tag.partition) +
                            " starts at row " + std::to_string(tag.first_row) + " but only " +
                            std::to_string(have) + " of its rows came before it");
  }
  const uint64_t known = std::min(have - tag.first_row, rows);
  if (known > 0 && progress_.duplicates == 0) {
    std::cerr << "sparktf: partition " << tag.partition
              << " is being fed again (Spark retried its feeding task); the rows an earlier "
                 "attempt delivered are dropped\n";
  }
  progress_.duplicates += known;
  if (known == rows) return Status::OK();
  RETURN_NOT_OK(rows_.Add(std::move(owner), message.substr(kTagSize), known));
  have = tag.first_row + rows;
  progress_.delivered += rows - known;
  return Status::OK();
}

void FeedReader::Abandon(const std::string& why) {
  std::cerr << "sparktf: inference partition " << partition_ << " abandoned: " << why << "\n";
  progress_.dropped += rows_.Clear();
  results_.reset();
  partition_ended_ = false;
  partition_abandoned_ = true;
}

Status FeedReader::FinishPartition() {
  if (partition_answered_ != partition_out_ || partition_out_ != partition_rows_) {
    return Status::InvalidArgument(
        "batch_results returned " + std::to_string(partition_answered_) + " results for the " +
        std::to_string(partition_rows_) + " rows of partition " + std::to_string(partition_) +
        ": inference needs exactly one result per input row");
  }
  results_.reset();  // detaches
  partition_ended_ = false;
  partition_ = -1;
  return Status::OK();
}

void FeedReader::ReportProgress(milliseconds min_interval) {
  const uint64_t taken = progress_.consumed + progress_.dropped;
  if (!sync_ || taken == reported_taken_ || Clock::now() - last_report_ < min_interval) return;
  last_report_ = Clock::now();
  reported_taken_ = taken;
  progress_.ring_fill = RingFill();
  (void)sync_(progress_);  // best effort: a lost report only means more is fed again
}

Status FeedReader::Report() {
  if (!sync_) return Status::OK();
  progress_.ring_fill = RingFill();
  return sync_(progress_).status();
}

double FeedReader::RingFill() const {
  const size_t capacity = input_->capacity();
  return capacity ? static_cast<double>(input_->stats().bytes_used) / capacity : 0.0;
}

Result<std::optional<BatchSlice>> FeedReader::NextLocked(uint64_t n, bool exact,
                                                         milliseconds timeout) {
  using Out = std::optional<BatchSlice>;
  if (n == 0) return Status::InvalidArgument("batch size must be positive");
  if (progress_.finished) return Out{};
  const bool lockstep = sync_ && exact;
  auto deadline = Clock::now() + timeout;
  auto last_sync = Clock::time_point{};
  while (true) {
    if (stop_.load()) return Out{};  // Terminate or Fail, elsewhere
    if (rows_.rows() == 0 && partition_ended_) {
      RETURN_NOT_OK(FinishPartition());
      continue;
    }
    const uint64_t have = rows_.rows();
    bool ready = have >= n || (!exact && have > 0 && (partition_ended_ || progress_.closed));
    if (ready && lockstep && allowed_ < progress_.consumed + n) ready = false;
    if (ready) {
      BatchSlice out;
      RETURN_NOT_OK(rows_.TakeSlice(n, &out, &pool_));
      progress_.consumed += out.rows;
      if (results_) partition_out_ += out.rows;
      ReportProgress(kProgressReportInterval);
      return Out(std::move(out));
    }
    if (progress_.closed && !lockstep && (have == 0 || exact)) {
      progress_.dropped += rows_.Clear();
      progress_.finished = true;
      RETURN_NOT_OK(Report());
      return Out{};
    }
    if (lockstep && allowed_ < progress_.consumed + n && (have >= n || progress_.closed) &&
        Clock::now() - last_sync >= kSyncInterval) {
      ASSIGN_OR_RETURN(Watermark wm, sync_(progress_));
      last_sync = Clock::now();
      if (wm.all_closed) {
        allowed_ = wm.min_delivered / n * n;
        if (progress_.consumed + n > allowed_) {
          progress_.dropped += rows_.Clear();
          progress_.finished = true;
          RETURN_NOT_OK(Report());
          return Out{};
        }
      } else {
        allowed_ = wm.min_delivered;
      }
      if (allowed_ >= progress_.consumed + n && have >= n) continue;
    }
    if (!progress_.closed && !partition_ended_) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now());
      const milliseconds wait = lockstep ? kWaitSlice : std::clamp(left, milliseconds{0}, milliseconds{100});
      ASSIGN_OR_RETURN(bool got, PopOne(wait));
      if (got) {
        deadline = Clock::now() + timeout;
        continue;
      }
      ReportProgress(milliseconds{0});  // ran dry: all it took is known
    } else if (!partition_ended_) {
      std::this_thread::sleep_for(kWaitSlice);  // closed: waiting for the other workers
    }
    if (Clock::now() >= deadline) {
      std::string why = "no data in the feed for " + std::to_string(timeout.count() / 1000) + " s";
      if (lockstep) {
        why += " (this worker has " + std::to_string(progress_.delivered) +
               " rows, every worker at least " + std::to_string(allowed_) + "; waiting for " +
               std::to_string(progress_.consumed + n) + ")";
      }
      return Status::DeadlineExceeded(why + ": are the feeding jobs running (cluster.train)?");
    }
  }
}

Status FeedReader::PushResultsLocked(std::string_view batch, milliseconds timeout) {
  ASSIGN_OR_RETURN(uint64_t rows, BatchRows(batch));
  if (!results_ && partition_abandoned_) return Status::OK();  // nobody waits for them
  if (!results_) {
    return Status::InvalidArgument("batch_results() outside an inference feed (no partition is open)");
  }
  if (partition_answered_ + rows > partition_out_) {
    return Status::InvalidArgument("batch_results got " + std::to_string(partition_answered_ + rows) +
                                   " results for the " + std::to_string(partition_out_) +
                                   " rows of partition " + std::to_string(partition_) +
                                   " handed out so far");
  }
  RETURN_NOT_OK(results_->Push(batch, timeout).WithContext("results of partition " +
                                                            std::to_string(partition_)));
  partition_answered_ += rows;
  return Status::OK();
}

Result<std::optional<std::vector<ColumnView>>> FeedReader::PeekSchemaLocked(
    milliseconds timeout) {
  auto deadline = Clock::now() + timeout;
  while (rows_.schema().empty()) {
    if (progress_.closed || progress_.finished || stop_.load()) {
      return std::optional<std::vector<ColumnView>>{};
    }
    ASSIGN_OR_RETURN(bool got, PopOne(milliseconds{100}));
    if (got) deadline = Clock::now() + timeout;
    if (Clock::now() >= deadline) {
      return Status::DeadlineExceeded("no data in the feed for " +
                                      std::to_string(timeout.count() / 1000) +
                                      " s: are the feeding jobs running (cluster.train)?");
    }
  }
  return std::optional<std::vector<ColumnView>>(rows_.schema());
}

}  // namespace sparktf::feed
