#include "sparktf/node/feed_task.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "sparktf/feed/batch.h"
#include "sparktf/feed/consumer.h"

namespace sparktf::node {
namespace {

using namespace std::chrono_literals;

nlohmann::json Job(int port, const std::string& cluster_id) {
  return {{"cluster_id", cluster_id}, {"token", "secret"}, {"qname", "input"},
          {"coordinator", "127.0.0.1:1"}, {"feed_id", 7}, {"feed_timeout", 5.0},
          {"generation", 0}, {"placement", "modulo"}, {"transport", "auto"},
          {"targets", nlohmann::json::array({nlohmann::json{
                          {"executor_id", 0}, {"host", "127.0.0.1"}, {"feed_port", port},
                          {"feed_index", 0}, {"job_name", "worker"}, {"task_index", 0}}})}};
}

TEST(FeedJobTest, ReadsTheDriversMetaAndNamesWhatIsMissing) {
  auto job = FeedJob::Parse(Job(4711, "c1").dump());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  EXPECT_EQ(job->cluster_id, "c1");
  EXPECT_EQ(job->feed_id, 7u);
  EXPECT_EQ(job->timeout, 5000ms);
  EXPECT_TRUE(job->modulo);
  EXPECT_FALSE(job->force_tcp);
  ASSERT_EQ(job->targets.size(), 1u);
  EXPECT_EQ(job->targets[0].feed_port, 4711);
  EXPECT_EQ(job->targets[0].job_name, "worker");

  auto j = Job(4711, "c1");
  j.erase("token");
  auto missing = FeedJob::Parse(j.dump());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("token"), std::string::npos)
      << missing.status().message();
  j = Job(4711, "c1");
  j["targets"] = nlohmann::json::array();
  EXPECT_EQ(FeedJob::Parse(j.dump()).status().message(), "feed job: no node to feed");
  EXPECT_EQ(FeedJob::Parse("[1]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FeedJob::Parse("{").status().code(), StatusCode::kInvalidArgument);
}

TEST(FeedJobTest, FeederSchedIsBatchUnlessSaidNormal) {
  auto j = Job(4711, "c1");
  EXPECT_TRUE(FeedJob::Parse(j.dump())->yield_to_training);
  j["feeder_sched"] = "normal";
  EXPECT_FALSE(FeedJob::Parse(j.dump())->yield_to_training);
  j["feeder_sched"] = "batch";
  EXPECT_TRUE(FeedJob::Parse(j.dump())->yield_to_training);
  j["feeder_sched"] = "idle";
  auto bad = FeedJob::Parse(j.dump());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("not \"idle\""), std::string::npos)
      << bad.status().message();
}

TEST(NodeFailureTest, AnUnreachableCoordinatorMeansTheClusterIsGone) {
  auto failure = NodeFailure({"127.0.0.1", 1}, "secret", 0, 300ms);
  ASSERT_TRUE(failure.has_value());
  EXPECT_NE(failure->find("coordinator is gone"), std::string::npos) << *failure;
}

// One int64 column "v" of `values`, as a producer of the C data interface lays it out.
struct Int64Batch {
  explicit Int64Batch(std::vector<int64_t> v) : values(std::move(v)) {
    buffers = {nullptr, values.data()};
    column = ArrowSchema{"l", "v", nullptr, 0, 0, nullptr, nullptr, nullptr, nullptr};
    column_array = ArrowArray{static_cast<int64_t>(values.size()), 0, 0, 2, 0, buffers.data(),
                              nullptr, nullptr, nullptr, nullptr};
    schema = ArrowSchema{"+s", "", nullptr, 0, 1, &column_ptr, nullptr, nullptr, nullptr};
    array = ArrowArray{static_cast<int64_t>(values.size()), 0, 0, 1, 1, struct_buffers.data(),
                       &column_array_ptr, nullptr, nullptr, nullptr};
  }
  std::vector<int64_t> values;
  std::vector<const void*> buffers;
  std::vector<const void*> struct_buffers{nullptr};
  ArrowSchema column{}, schema{};
  ArrowArray column_array{}, array{};
  ArrowSchema* column_ptr = &column;
  ArrowArray* column_array_ptr = &column_array;
};

// transport "auto" (the node is on this host: shared memory) and "tcp".
class ArrowPartitionFeedTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    ::unsetenv("SPARK_LOCAL_IP");
    cluster_id_ = "ft" + std::to_string(::getpid()) + "_" + std::to_string(counter_++);
    auto s = FeedServer::Start({cluster_id_, 0, "secret", "127.0.0.1", 5000ms});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    auto j = Job(server_->port(), cluster_id_);
    if (!GetParam()) j["transport"] = "tcp";
    job_ = *FeedJob::Parse(j.dump());
  }

  static inline int counter_ = 0;
  std::string cluster_id_;
  std::unique_ptr<FeedServer> server_;
  FeedJob job_;
};

TEST_P(ArrowPartitionFeedTest, RowsReachTheNodeOfThePartitionOnce) {
  feed::FeedReader reader(
      std::move(feed::Ring::Create(*FeedRingName(cluster_id_, 0, "input"), 1 << 20)).ValueOrDie(),
      nullptr);
  std::vector<int64_t> v(1000);
  for (int i = 0; i < 1000; ++i) v[i] = 3 * i;
  Int64Batch batch(v);
  for (int attempt = 0; attempt < 2; ++attempt) {  // Spark retried the task: no duplicates
    // the first attempt's thread yields to training while it feeds; the second does not
    job_.yield_to_training = attempt == 0;
    {
      auto feed = ArrowPartitionFeed::Open(job_, 5);
      ASSERT_TRUE(feed.ok()) << feed.status().ToString();
      EXPECT_EQ((*feed)->local(), GetParam());
      EXPECT_FALSE((*feed)->stopped());
      EXPECT_EQ((*feed)->yielded(), attempt == 0);
      EXPECT_EQ(*ThreadPolicy(0), attempt == 0 ? SchedPolicy::kBatch : SchedPolicy::kOther);
      auto pushed = (*feed)->Push(batch.schema, batch.array);
      ASSERT_TRUE(pushed.ok()) << pushed.status().ToString();
      EXPECT_EQ(*pushed, 1000u);
      ASSERT_TRUE((*feed)->Finish().ok());
    }
    EXPECT_EQ(*ThreadPolicy(0), SchedPolicy::kOther);  // the feed gave the thread back
  }
  ASSERT_TRUE(CloseFeed({cluster_id_, 0, {"127.0.0.1", server_->port()}, false}, "secret",
                        "input", 5s).ok());
  std::vector<int64_t> got;
  while (true) {
    auto b = reader.Next(128, false, 5s);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (!*b) break;
    uint64_t rows = 0;
    std::vector<feed::ColumnView> cols;
    ASSERT_TRUE(feed::DecodeBatch(**b, &rows, &cols).ok());
    ASSERT_EQ(cols.size(), 1u);
    EXPECT_EQ(cols[0].name, "v");
    const size_t at = got.size();
    got.resize(at + rows);
    std::memcpy(got.data() + at, cols[0].data.data(), rows * 8);
  }
  EXPECT_EQ(got, v);
  EXPECT_EQ(reader.progress().duplicates, 1000u);
}

TEST_P(ArrowPartitionFeedTest, AConsumerThatStoppedReadingSkipsTheRest) {
  feed::FeedReader reader(
      std::move(feed::Ring::Create(*FeedRingName(cluster_id_, 0, "input"), 1 << 20)).ValueOrDie(),
      nullptr);
  auto feed = ArrowPartitionFeed::Open(job_, 0);
  ASSERT_TRUE(feed.ok()) << feed.status().ToString();
  reader.Terminate();
  Int64Batch batch(std::vector<int64_t>(100, 1));
  uint64_t pushed = 0;
  for (int i = 0; i < 50 && !(*feed)->stopped(); ++i) {
    auto p = (*feed)->Push(batch.schema, batch.array);
    ASSERT_TRUE(p.ok()) << p.status().ToString();
    pushed += *p;
  }
  // Shared memory: the first push is refused. TCP: the batches may all wait in the
  // socket's buffers, and the agent's answer comes at the end.
  if (GetParam()) {
    EXPECT_EQ(pushed, 0u);
  }
  const Status finished = (*feed)->Finish();
  EXPECT_TRUE(finished.ok()) << finished.ToString();
  EXPECT_TRUE((*feed)->stopped());
}

TEST_P(ArrowPartitionFeedTest, ANullNamesTheColumnAndThePartitionsNode) {
  feed::FeedReader reader(
      std::move(feed::Ring::Create(*FeedRingName(cluster_id_, 0, "input"), 1 << 20)).ValueOrDie(),
      nullptr);
  auto feed = ArrowPartitionFeed::Open(job_, 2);
  ASSERT_TRUE(feed.ok()) << feed.status().ToString();
  Int64Batch batch({1, 2, 3});
  const uint8_t validity = 0b101;
  batch.buffers[0] = &validity;
  batch.column_array.null_count = 1;
  auto p = (*feed)->Push(batch.schema, batch.array);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(p.status().message(),
            "feeding partition 2 to node 0 (worker:0 on 127.0.0.1): column 'v' has nulls; fill "
            "or drop them before feeding");
}

TEST_P(ArrowPartitionFeedTest, ANodeWithoutAFeedIsGoneWithTheCoordinatorsReason) {
  // The node's agent is gone, and the coordinator (127.0.0.1:1) does not answer.
  server_.reset();
  for (const bool inference : {false, true}) {
    auto s = OpenPartitionSession(job_, 4, inference);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.status().code(), StatusCode::kAborted) << s.status().ToString();
    EXPECT_EQ(s.status().message().rfind("feeding partition 4 to node 0 (worker:0 on 127.0.0.1): "
                                         "the node is gone: the cluster's coordinator is gone",
                                         0),
              0u)
        << s.status().message();
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, ArrowPartitionFeedTest, ::testing::Bool());

}  // namespace
}  // namespace sparktf::node
