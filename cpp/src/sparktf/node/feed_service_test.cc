#include "sparktf/node/feed_service.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "sparktf/feed/batch.h"
#include "sparktf/node/agent_frames.h"

namespace sparktf::node {
namespace {

using namespace std::chrono_literals;
using feed::ColumnType;
using feed::ColumnView;

std::string Ints(int64_t first, int rows) {
  std::vector<int64_t> v;
  for (int i = 0; i < rows; ++i) v.push_back(first + i);
  std::vector<ColumnView> cols = {{"v", ColumnType::kInt64, {static_cast<uint64_t>(rows)},
                                   {reinterpret_cast<const char*>(v.data()), v.size() * 8}}};
  std::string out;
  EXPECT_TRUE(feed::EncodeBatch(cols, static_cast<uint64_t>(rows), &out).ok());
  return out;
}

std::vector<int64_t> Values(const std::string& batch) {
  uint64_t rows = 0;
  std::vector<ColumnView> cols;
  EXPECT_TRUE(feed::DecodeBatch(batch, &rows, &cols).ok());
  std::vector<int64_t> v(rows);
  if (rows) std::memcpy(v.data(), cols[0].data.data(), rows * 8);
  return v;
}

class FeedServiceTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    cluster_id_ = "t" + std::to_string(::getpid()) + "_" + std::to_string(counter_++);
    auto s = FeedServer::Start({cluster_id_, 0, "secret", "127.0.0.1", 5000ms});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(*s);
    target_ = {cluster_id_, 0, {"127.0.0.1", server_->port()}, /*prefer_local=*/GetParam()};
  }
  std::string Ring(const std::string& q) { return *FeedRingName(cluster_id_, 0, q); }

  static inline int counter_ = 0;
  std::string cluster_id_;
  std::unique_ptr<FeedServer> server_;
  FeedTarget target_;
};

TEST_P(FeedServiceTest, TrainRowsArriveAndCloseEndsTheFeed) {
  feed::FeedReader reader(std::move(feed::Ring::Create(Ring("input"), 1 << 20)).ValueOrDie(),
                          nullptr);
  auto session = FeedSession::Open(target_, "secret", "input", 0, 0, false, 5s);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  EXPECT_EQ((*session)->local(), GetParam());
  for (int i = 0; i < 100; i += 20) ASSERT_TRUE((*session)->Push(Ints(i, 20)).ok());
  ASSERT_TRUE((*session)->Finish().ok());
  ASSERT_TRUE(CloseFeed(target_, "secret", "input", 5s).ok());
  int64_t sum = 0, rows = 0;
  while (true) {
    auto b = reader.Next(30, false, 5s);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (!*b) break;
    for (int64_t v : Values(**b)) sum += v, ++rows;
  }
  EXPECT_EQ(rows, 100);
  EXPECT_EQ(sum, 4950);
}

// A feeding task that Spark retries after it pushed part of its partition (through
// either transport): its rows reach the node once.
TEST_P(FeedServiceTest, RetriedPartitionReachesTheNodeOnce) {
  feed::FeedReader reader(std::move(feed::Ring::Create(Ring("input"), 1 << 20)).ValueOrDie(),
                          nullptr);
  {
    auto attempt0 = std::move(FeedSession::Open(target_, "secret", "input", 77, 3, false, 5s)).ValueOrDie();
    for (int i = 0; i < 30; i += 10) ASSERT_TRUE(attempt0->Push(Ints(i, 10)).ok());
  }  // dies without FEED_END
  std::vector<int64_t> got;
  auto first = reader.Next(30, true, 5s);  // what attempt 0 delivered
  ASSERT_TRUE(first.ok() && *first) << first.status().ToString();
  got = Values(**first);
  auto attempt1 = std::move(FeedSession::Open(target_, "secret", "input", 77, 3, false, 5s)).ValueOrDie();
  for (int i = 0; i < 100; i += 25) ASSERT_TRUE(attempt1->Push(Ints(i, 25)).ok());
  ASSERT_TRUE(attempt1->Finish().ok());
  ASSERT_TRUE(CloseFeed(target_, "secret", "input", 5s).ok());
  while (true) {
    auto b = reader.Next(16, false, 5s);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (!*b) break;
    for (int64_t v : Values(**b)) got.push_back(v);
  }
  std::vector<int64_t> want(100);
  for (int i = 0; i < 100; ++i) want[i] = i;
  EXPECT_EQ(got, want);
  EXPECT_EQ(reader.progress().duplicates, 30u);
}

TEST_P(FeedServiceTest, InferenceReturnsOneResultPerRowInOrder) {
  feed::FeedReader reader(std::move(feed::Ring::Create(Ring("input"), 1 << 20)).ValueOrDie(),
                          nullptr);
  std::thread consumer([&] {
    while (true) {
      auto b = reader.Next(16, false, 5s);
      ASSERT_TRUE(b.ok()) << b.status().ToString();
      if (!*b) return;
      auto v = Values(**b);
      ASSERT_TRUE(reader.PushResults(Ints(v.front() * 1000, static_cast<int>(v.size())), 5s).ok());
    }
  });
  for (int p = 0; p < 2; ++p) {
    auto session = std::move(FeedSession::Open(target_, "secret", "input", 0, p, true, 5s)).ValueOrDie();
    for (int i = 0; i < 40; i += 10) ASSERT_TRUE(session->Push(Ints(i, 10)).ok());
    ASSERT_TRUE(session->Finish().ok());
    std::vector<int64_t> got;
    for (const auto& r : session->TakeResults()) {
      auto v = Values(r);
      got.insert(got.end(), v.begin(), v.end());
    }
    ASSERT_EQ(got.size(), 40u);
    EXPECT_EQ(got[0], 0);
    EXPECT_EQ(got[16], 16000);
    EXPECT_EQ(got[32], 32000);
  }
  ASSERT_TRUE(CloseFeed(target_, "secret", "input", 5s).ok());
  consumer.join();
}

TEST_P(FeedServiceTest, ConsumerFailureReachesTheFeedingTask) {
  auto reader = std::make_unique<feed::FeedReader>(
      std::move(feed::Ring::Create(Ring("input"), 1 << 16)).ValueOrDie(), nullptr);
  auto session = std::move(FeedSession::Open(target_, "secret", "input", 0, 0, false, 5s)).ValueOrDie();
  ASSERT_TRUE(session->Push(Ints(0, 10)).ok());
  reader->Fail("map_fun failed: ValueError: boom");
  Status st;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 1000 && st.ok(); ++i) st = session->Push(Ints(0, 1000));
  EXPECT_EQ(st.code(), StatusCode::kAborted);
  EXPECT_NE(st.message().find("ValueError: boom"), std::string::npos) << st.ToString();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  // Once the TF process is gone, new sessions fail at once with the reason.
  reader.reset();
  server_->ConsumerExited("exited with code 1:\nValueError: boom");
  auto again = FeedSession::Open(target_, "secret", "input", 0, 1, false, 5s);
  EXPECT_EQ(again.status().code(), StatusCode::kAborted);
  EXPECT_NE(again.status().message().find("ValueError: boom"), std::string::npos);
}

// docs/protocol.md: a consumer's failure reaches a feeding task within 100 ms (the
// rings' liveness slices). The margin is for sanitizer builds on a loaded CI machine.
TEST_P(FeedServiceTest, ConsumerFailureReachesABlockedFeedingTaskWithin100Ms) {
  constexpr auto kPromise = 100ms, kMargin = 400ms;
  auto reader = std::make_unique<feed::FeedReader>(
      std::move(feed::Ring::Create(Ring("input"), 1 << 16)).ValueOrDie(), nullptr);
  auto session = std::move(FeedSession::Open(target_, "secret", "input", 0, 0, false, 5s)).ValueOrDie();
  std::atomic<int64_t> failed_at{0};
  std::thread failer([&] {
    std::this_thread::sleep_for(500ms);  // the ring is full and nobody reads: Push blocks
    failed_at = std::chrono::steady_clock::now().time_since_epoch().count();
    reader->Fail("map_fun failed: ValueError: boom");
  });
  Status st;
  while (st.ok()) st = session->Push(Ints(0, 1000));
  const auto returned = std::chrono::steady_clock::now();
  failer.join();
  EXPECT_EQ(st.code(), StatusCode::kAborted) << st.ToString();
  ASSERT_NE(failed_at.load(), 0) << "Push failed before the consumer did: " << st.ToString();
  const auto took = returned - std::chrono::steady_clock::time_point(
                                   std::chrono::steady_clock::duration(failed_at.load()));
  EXPECT_LT(took, kPromise + kMargin)
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
}

// A remote task that dies in the middle of a frame (the agent receives frames straight
// into the ring): its half-written batch is never seen, and other tasks' rows go on.
class RemoteFeedTest : public FeedServiceTest {};  // TCP only: local tasks push themselves

TEST_P(RemoteFeedTest, ARemoteTaskThatDiesMidFrameLeavesNoPartialBatch) {
  feed::FeedReader reader(std::move(feed::Ring::Create(Ring("input"), 1 << 20)).ValueOrDie(),
                          nullptr);
  {
    auto conn = std::move(cluster::Connection::Open(target_.address, "secret", 5s)).ValueOrDie();
    auto ready = conn.Call(cluster::MessageType::kFeedOpen,
                           R"({"qname": "input", "feed": 9, "partition": 0})",
                           cluster::MessageType::kFeedReady, 5s);
    ASSERT_TRUE(ready.ok()) << ready.status().ToString();
    const std::string batch = Ints(1000, 100);
    char header[cluster::kFrameHeaderSize];
    cluster::EncodeFrameHeader(cluster::MessageType::kFeedData,
                               static_cast<uint32_t>(batch.size()), header);
    ASSERT_TRUE(WriteAll(conn.fd(), std::string_view(header, sizeof(header))).ok());
    ASSERT_TRUE(WriteAll(conn.fd(), std::string_view(batch).substr(0, batch.size() / 2)).ok());
    std::this_thread::sleep_for(200ms);  // the agent is inside the frame
  }  // the connection closes mid-payload
  auto other = std::move(FeedSession::Open(target_, "secret", "input", 9, 1, false, 5s)).ValueOrDie();
  for (int i = 0; i < 50; i += 10) ASSERT_TRUE(other->Push(Ints(i, 10)).ok());
  ASSERT_TRUE(other->Finish().ok());
  ASSERT_TRUE(CloseFeed(target_, "secret", "input", 5s).ok());
  std::vector<int64_t> got;
  while (true) {
    auto b = reader.Next(16, false, 5s);
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    if (!*b) break;
    for (int64_t v : Values(**b)) got.push_back(v);
  }
  std::vector<int64_t> want(50);
  for (int i = 0; i < 50; ++i) want[i] = i;
  EXPECT_EQ(got, want);
}

TEST_P(FeedServiceTest, WrongTokenAndBadQueueAreRefused) {
  EXPECT_EQ(FeedSession::Open(target_, "wrong", "input", 0, 0, false, 2s).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(FeedSession::Open(target_, "secret", "../etc", 0, 0, false, 2s).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(FeedNamesTest, TheRingFamilyCoversEveryGenerationOfACluster) {
  EXPECT_EQ(FeedRingFamilyPrefix("0123abcdg0"), "/sparktf-0123abcdg");
  EXPECT_EQ(FeedRingFamilyPrefix("0123abcdg12"), "/sparktf-0123abcdg");
  EXPECT_TRUE(FeedRingName("0123abcdg3", 5, "input")->starts_with(
      FeedRingFamilyPrefix("0123abcdg0")));
  EXPECT_EQ(FeedRingFamilyPrefix("plain"), "/sparktf-plain-");
  EXPECT_EQ(FeedRingFamilyPrefix("abc123"), "/sparktf-abc123-");
}

TEST(AgentFramesTest, ReadsWhatTheCoordinatorAsksAndNothingElse) {
  using cluster::Frame;
  using cluster::MessageType;
  auto spec = ReadCoordinatorFrame(Frame{MessageType::kClusterSpec,
                                         R"({"tf_config": "{}", "is_chief": true})"});
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->kind, CoordinatorRequest::Kind::kClusterSpec);
  EXPECT_TRUE(IsTensorBoardNode(spec->spec));
  EXPECT_EQ(SpecEnvironment(spec->spec).at("TF_CONFIG"), "{}");
  // Mistyped fields read as absent, not as a crash.
  auto odd = ReadCoordinatorFrame(Frame{MessageType::kClusterSpec,
                                        R"({"tf_config": 7, "is_chief": "yes"})"});
  ASSERT_TRUE(odd.ok());
  EXPECT_FALSE(IsTensorBoardNode(odd->spec));
  EXPECT_EQ(SpecEnvironment(odd->spec).at("TF_CONFIG"), "");
  EXPECT_EQ(ReadCoordinatorFrame(Frame{MessageType::kClusterSpec, "[1]"}).status().code(),
            StatusCode::kInvalidArgument);
  auto abort = ReadCoordinatorFrame(Frame{MessageType::kAbort, R"({"reason": "worker:1 died"})"});
  ASSERT_TRUE(abort.ok());
  EXPECT_EQ(abort->kind, CoordinatorRequest::Kind::kAbort);
  EXPECT_EQ(abort->reason, "worker:1 died");
  EXPECT_EQ(ReadCoordinatorFrame(Frame{MessageType::kAbort, "not json"})->reason, "");
  EXPECT_EQ(ReadCoordinatorFrame(Frame{MessageType::kStop, ""})->kind,
            CoordinatorRequest::Kind::kStop);
  EXPECT_EQ(ReadCoordinatorFrame(Frame{MessageType::kHeartbeat, "{}"})->kind,
            CoordinatorRequest::Kind::kIgnore);
}

INSTANTIATE_TEST_SUITE_P(Transports, FeedServiceTest, ::testing::Values(true, false),
                         [](const auto& info) { return info.param ? "Local" : "Tcp"; });
INSTANTIATE_TEST_SUITE_P(Tcp, RemoteFeedTest, ::testing::Values(false));

}  // namespace
}  // namespace sparktf::node
