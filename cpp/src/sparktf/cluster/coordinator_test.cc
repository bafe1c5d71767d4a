#include "sparktf/cluster/coordinator.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>
#include <atomic>
#include <cstring>
#include <optional>
#include <span>
#include <thread>
#include <vector>

namespace sparktf::cluster {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

const std::string kToken = "0123456789abcdef0123456789abcdef";

std::unique_ptr<Coordinator> StartCoordinator(int n, int ps = 0, std::string master = "",
                                              bool eval = false,
                                              std::chrono::milliseconds hb = 10s) {
  CoordinatorOptions o;
  o.bind_host = "127.0.0.1";
  o.token = kToken;
  o.num_nodes = n;
  o.num_ps = ps;
  o.master_node = master;
  o.eval_node = eval;
  o.heartbeat_timeout = hb;
  auto c = Coordinator::Start(o);
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).ValueOrDie();
}

HostPort Addr(const Coordinator& c) { return {"127.0.0.1", c.port()}; }

// A fake node agent: registers and fetches its cluster spec.
struct FakeNode {
  Connection conn;
  json spec;
};

FakeNode Join(const Coordinator& c, int executor_id, int port) {
  auto conn = Connection::Open(Addr(c), kToken, 5s);
  EXPECT_TRUE(conn.ok()) << conn.status().ToString();
  Connection cn = std::move(conn).ValueOrDie();
  json reg = {{"executor_id", executor_id}, {"host", "127.0.0.1"}, {"port", port}, {"pid", 1}};
  EXPECT_TRUE(cn.Call(MessageType::kRegister, reg.dump(), MessageType::kRegistered, 5s).ok());
  return {std::move(cn), json()};
}

json AwaitSpec(FakeNode& n) {
  auto f = n.conn.Call(MessageType::kAwaitCluster, "{}", MessageType::kClusterSpec, 10s);
  EXPECT_TRUE(f.ok()) << f.status().ToString();
  return f.ok() ? json::parse(f->payload) : json();
}

void ReportExit(FakeNode& n, int code, const std::string& tb = "", bool stopped = false) {
  json j = {{"exit_code", code}, {"traceback", tb}, {"stopped", stopped}};
  auto r = n.conn.Call(MessageType::kReportExit, j.dump(), MessageType::kReportAck, 5s);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
}

class CoordinatorRolesTest : public ::testing::TestWithParam<int> {};

// Roles in TFoS's order for world sizes 2..6: ps first, then the chief, then
// the evaluator, then workers, by executor id, whatever the arrival order.
TEST_P(CoordinatorRolesTest, AssignsRolesInTfosOrder) {
  const int n = GetParam();
  const int ps = n >= 4 ? 1 : 0;
  const bool eval = n >= 5;
  auto coord = StartCoordinator(n, ps, "chief", eval);
  std::vector<json> specs(n);
  std::vector<std::optional<FakeNode>> nodes(n);  // connections stay open until the end
  std::vector<std::thread> threads;
  for (int i = n - 1; i >= 0; --i) {  // arrive in reverse order
    threads.emplace_back([&, i] {
      nodes[i].emplace(Join(*coord, i, 5000 + i));
      specs[i] = AwaitSpec(*nodes[i]);
    });
  }
  for (auto& t : threads) t.join();
  ASSERT_TRUE(coord->WaitReserved(1s).ok());
  int e = 0;
  for (int i = 0; i < ps; ++i, ++e) EXPECT_EQ(specs[e]["job_name"], "ps");
  EXPECT_EQ(specs[e]["job_name"], "chief");
  EXPECT_EQ(specs[e++]["task_index"], 0);
  if (eval) {
    EXPECT_EQ(specs[e++]["job_name"], "evaluator");
  }
  for (int w = 0; e < n; ++e, ++w) {
    EXPECT_EQ(specs[e]["job_name"], "worker");
    EXPECT_EQ(specs[e]["task_index"], w);
  }
  json tf = json::parse(specs[n - 1]["tf_config"].get<std::string>());
  EXPECT_EQ(tf["task"]["type"], "worker");
  EXPECT_EQ(tf["environment"], "cloud");
  EXPECT_FALSE(tf["cluster"].contains("evaluator"));
  EXPECT_EQ(tf["cluster"]["chief"][0], "127.0.0.1:" + std::to_string(5000 + ps));
  EXPECT_EQ(specs[0]["num_workers"], n - ps - (eval ? 1 : 0));
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CoordinatorRolesTest, ::testing::Values(2, 3, 4, 5, 6));

TEST(CoordinatorTest, RefusesBadTokenAndKeepsServing) {
  auto coord = StartCoordinator(1);
  auto bad = Connection::Open(Addr(*coord), "wrong-token", 5s);
  EXPECT_EQ(bad.status().code(), StatusCode::kUnauthenticated) << bad.status().ToString();
  // A frame other than HELLO first is refused the same way.
  auto raw = ConnectTcp(Addr(*coord), 5s);
  ASSERT_TRUE(raw.ok());
  std::string frame;
  AppendFrame(MessageType::kGetStatus, "{}", &frame);
  ASSERT_TRUE(WriteAll(raw->get(), frame).ok());
  char buf[256];
  ssize_t n = ::recv(raw->get(), buf, sizeof(buf), 0);
  EXPECT_GT(n, 0);  // an ERROR frame, then the connection closes
  EXPECT_EQ(::recv(raw->get(), buf, sizeof(buf), 0), 0);
  FakeNode ok = Join(*coord, 0, 1);
  EXPECT_TRUE(coord->WaitReserved(2s).ok());
  EXPECT_EQ(coord->rejected_connections(), 2);
}

TEST(CoordinatorTest, RefusesMalformedAndOversizedFramesAndKeepsServing) {
  CoordinatorOptions o;
  o.bind_host = "127.0.0.1";
  o.token = kToken;
  o.num_nodes = 1;
  o.max_frame_size = 1024;
  auto coord = std::move(Coordinator::Start(o)).ValueOrDie();
  {
    auto raw = ConnectTcp(Addr(*coord), 5s);
    ASSERT_TRUE(WriteAll(raw->get(), "GET / HTTP/1.0\r\n\r\n").ok());
    char buf[256];
    EXPECT_GT(::recv(raw->get(), buf, sizeof(buf), 0), 0);
  }
  {
    auto conn = Connection::Open(Addr(*coord), kToken, 5s);
    ASSERT_TRUE(conn.ok());
    auto r = conn->Call(MessageType::kRegister, std::string(4096, '{'), MessageType::kRegistered,
                        5s);
    EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status().ToString();
  }
  {
    auto conn = Connection::Open(Addr(*coord), kToken, 5s);
    auto r = conn->Call(MessageType::kRegister, "not json", MessageType::kRegistered, 5s);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    auto conn2 = Connection::Open(Addr(*coord), kToken, 5s);
    json reg = {{"executor_id", 7}, {"host", "h"}, {"port", 1}};
    r = conn2->Call(MessageType::kRegister, reg.dump(), MessageType::kRegistered, 5s);
    EXPECT_NE(r.status().message().find("outside 0..0"), std::string::npos);
  }
  FakeNode ok = Join(*coord, 0, 1);
  EXPECT_TRUE(coord->WaitReserved(2s).ok());
  EXPECT_EQ(coord->rejected_connections(), 4);
}

TEST(CoordinatorTest, ReservationTimeoutNamesMissingExecutors) {
  auto coord = StartCoordinator(3);
  FakeNode a = Join(*coord, 0, 1);
  Status st = coord->WaitReserved(300ms);
  EXPECT_EQ(st.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(st.message().find("1 of 3 nodes registered; missing executors: 1, 2"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("task slot per executor"), std::string::npos);
  // The message reports the whole wait, not the last call's share of it.
  st = coord->WaitReserved(800ms);
  EXPECT_NE(st.message().find("reservation timed out after 1 s"), std::string::npos)
      << st.message();
}

TEST(CoordinatorTest, DuplicateExecutorIsRefused) {
  auto coord = StartCoordinator(2);
  FakeNode a = Join(*coord, 0, 1);
  auto conn = Connection::Open(Addr(*coord), kToken, 5s);
  json reg = {{"executor_id", 0}, {"host", "h"}, {"port", 2}};
  auto r = conn->Call(MessageType::kRegister, reg.dump(), MessageType::kRegistered, 5s);
  EXPECT_NE(r.status().message().find("registered twice"), std::string::npos);
}

TEST(CoordinatorTest, FailedNodeAbortsTheOthersWithItsTraceback) {
  auto coord = StartCoordinator(3);
  std::vector<FakeNode> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(Join(*coord, i, 100 + i));
  for (auto& n : nodes) AwaitSpec(n);
  ReportExit(nodes[1], 1, "Traceback (most recent call last):\nValueError: boom");
  for (int i : {0, 2}) {
    auto f = nodes[i].conn.Receive(5s);
    ASSERT_TRUE(f.ok()) << f.status().ToString();
    EXPECT_EQ(f->type, MessageType::kAbort);
    EXPECT_NE(f->payload.find("ValueError: boom"), std::string::npos);
  }
  Status st = coord->WaitFinished(1s);
  EXPECT_EQ(st.code(), StatusCode::kAborted);
  EXPECT_NE(st.message().find("worker:1 (executor 1 on 127.0.0.1) failed with exit code 1"),
            std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("ValueError: boom"), std::string::npos);
}

TEST(CoordinatorTest, LostConnectionAbortsTheCluster) {
  auto coord = StartCoordinator(2);
  FakeNode a = Join(*coord, 0, 1);
  std::optional<FakeNode> b(Join(*coord, 1, 2));
  AwaitSpec(a);
  AwaitSpec(*b);
  b.reset();  // b's connection closes without an exit report
  auto f = a.conn.Receive(5s);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->type, MessageType::kAbort);
  Status st = coord->WaitFinished(1s);
  EXPECT_NE(st.message().find("was lost"), std::string::npos) << st.message();
}

TEST(CoordinatorTest, NodesAreDescribedWithTheirSparkExecutorAndContainer) {
  auto coord = StartCoordinator(2);
  FakeNode a = Join(*coord, 0, 1);
  auto conn = Connection::Open(Addr(*coord), kToken, 5s);
  ASSERT_TRUE(conn.ok());
  json reg = {{"executor_id", 1}, {"host", "127.0.0.1"}, {"port", 2}, {"pid", 1},
              {"spark_executor", "7"}, {"container", "container_1_0001_01_000003"}};
  ASSERT_TRUE(conn->Call(MessageType::kRegister, reg.dump(), MessageType::kRegistered, 5s).ok());
  std::optional<FakeNode> b(FakeNode{std::move(conn).ValueOrDie(), json()});
  AwaitSpec(a);
  AwaitSpec(*b);
  json report = {{"exit_code", 0}, {"signal", 9}, {"reason", "agent received signal 15"}};
  ASSERT_TRUE(b->conn.Call(MessageType::kReportExit, report.dump(), MessageType::kReportAck, 5s)
                  .ok());
  Status st = coord->WaitFinished(2s);
  EXPECT_NE(st.message().find("worker:1 (executor 1 on 127.0.0.1, Spark executor 7, "
                              "container_1_0001_01_000003) failed with signal 9"),
            std::string::npos)
      << st.message();
  json status = json::parse(coord->StatusJson());
  const json& node = status["nodes"][1];
  EXPECT_EQ(node["spark_executor"], "7");
  EXPECT_EQ(node["container"], "container_1_0001_01_000003");
  EXPECT_EQ(node["reason"], "agent received signal 15");
  EXPECT_EQ(status["nodes"][0]["spark_executor"], "");  // not told: not named
}

// Found in CI: an agent that reports its exit and closes at once must count as
// exited, not lost (the report and the close arrive in one read).
TEST(CoordinatorTest, ExitReportFollowedByCloseCountsAsExited) {
  auto coord = StartCoordinator(2);
  std::vector<FakeNode> nodes;
  for (int i = 0; i < 2; ++i) nodes.push_back(Join(*coord, i, 100 + i));
  for (auto& n : nodes) AwaitSpec(n);
  for (auto& n : nodes) {
    ASSERT_TRUE(n.conn.Send(MessageType::kReportExit, R"({"exit_code": 0})").ok());
    ::shutdown(n.conn.fd(), SHUT_RDWR);  // close without waiting for the ack
  }
  Status st = coord->WaitFinished(5s);
  EXPECT_TRUE(st.ok()) << st.ToString();
}

TEST(CoordinatorTest, SilentNodeIsLostAfterHeartbeatTimeout) {
  auto coord = StartCoordinator(1, 0, "", false, 300ms);
  FakeNode a = Join(*coord, 0, 1);
  AwaitSpec(a);
  auto t0 = std::chrono::steady_clock::now();
  Status st = coord->WaitFinished(5s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 3s);
  EXPECT_NE(st.message().find("sent no heartbeat"), std::string::npos) << st.message();
}

TEST(CoordinatorTest, WorkersDoneStopsParameterServers) {
  auto coord = StartCoordinator(3, 1);
  std::vector<FakeNode> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(Join(*coord, i, 100 + i));
  for (auto& n : nodes) AwaitSpec(n);
  ReportExit(nodes[1], 0);
  ReportExit(nodes[2], 0);
  auto f = nodes[0].conn.Receive(5s);  // the ps is told to stop
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->type, MessageType::kStop);
  ReportExit(nodes[0], -15, "", /*stopped=*/true);
  EXPECT_TRUE(coord->WaitFinished(2s).ok());
  json status = json::parse(coord->StatusJson());
  EXPECT_TRUE(status["finished"].get<bool>());
  EXPECT_FALSE(status["aborted"].get<bool>());
}

// MultiWorkerMirrored with an evaluator: chief, evaluator, worker. The evaluator serves
// until the training nodes are done, then is told to stop; its stopped exit is clean.
TEST(CoordinatorTest, TrainingDoneStopsTheEvaluator) {
  auto coord = StartCoordinator(3, 0, "chief", /*eval=*/true);
  std::vector<FakeNode> nodes;
  for (int i = 0; i < 3; ++i) nodes.push_back(Join(*coord, i, 100 + i));
  std::vector<std::string> roles;
  for (auto& n : nodes) roles.push_back(AwaitSpec(n)["job_name"].get<std::string>());
  ASSERT_EQ(roles, (std::vector<std::string>{"chief", "evaluator", "worker"}));
  ReportExit(nodes[2], 0);  // the worker
  auto early = nodes[1].conn.Receive(300ms);
  EXPECT_EQ(early.status().code(), StatusCode::kDeadlineExceeded)
      << "the evaluator was stopped while the chief still trained";
  ReportExit(nodes[0], 0);  // the chief
  auto f = nodes[1].conn.Receive(5s);
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->type, MessageType::kStop);
  ReportExit(nodes[1], -15, "", /*stopped=*/true);
  EXPECT_TRUE(coord->WaitFinished(2s).ok());
  EXPECT_FALSE(json::parse(coord->StatusJson())["aborted"].get<bool>());
}

// A connection that never says HELLO is refused after hello_timeout (it would otherwise
// hold a slot for ever), and the coordinator keeps serving.
TEST(CoordinatorTest, AConnectionWithoutHelloIsClosedAfterTheTimeout) {
  CoordinatorOptions o;
  o.bind_host = "127.0.0.1";
  o.token = kToken;
  o.num_nodes = 1;
  o.hello_timeout = 300ms;
  auto coord = std::move(Coordinator::Start(o)).ValueOrDie();
  auto raw = ConnectTcp(Addr(*coord), 5s);
  ASSERT_TRUE(raw.ok());
  const auto t0 = std::chrono::steady_clock::now();
  char buf[512];
  ssize_t n = ::recv(raw->get(), buf, sizeof(buf), 0);
  const auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_GT(n, 0);  // an ERROR frame naming the timeout, then the close
  EXPECT_NE(std::string(buf, static_cast<size_t>(n)).find("no HELLO within 300 ms"),
            std::string::npos);
  EXPECT_EQ(::recv(raw->get(), buf, sizeof(buf), 0), 0);
  EXPECT_GE(took, 250ms);
  EXPECT_LT(took, 300ms + 100ms + 600ms);  // the timeout, a 100 ms check, a margin
  EXPECT_EQ(coord->rejected_connections(), 1);
  FakeNode ok = Join(*coord, 0, 1);
  EXPECT_TRUE(coord->WaitReserved(2s).ok());
}

TEST(CoordinatorTest, ChiefDoneStopsWorkersAndPsUnderParameterServerStrategy) {
  auto coord = StartCoordinator(4, 1, "chief");  // ps, chief, worker:0, worker:1
  std::vector<FakeNode> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(Join(*coord, i, 100 + i));
  for (auto& n : nodes) AwaitSpec(n);
  ReportExit(nodes[1], 0);  // the chief
  for (int i : {0, 2, 3}) {
    auto f = nodes[i].conn.Receive(5s);
    ASSERT_TRUE(f.ok());
    EXPECT_EQ(f->type, MessageType::kStop) << "node " << i;
    ReportExit(nodes[i], -15, "", /*stopped=*/true);
  }
  EXPECT_TRUE(coord->WaitFinished(2s).ok());
}

TEST(CoordinatorTest, BarrierReleasesAllOnlyWhenAllArrive) {
  auto coord = StartCoordinator(3);
  std::vector<std::thread> threads;
  std::atomic<int> arrived{0};
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(100 * i));
      auto conn = Connection::Open(Addr(*coord), kToken, 5s);
      json b = {{"name", "start"}, {"executor_id", i}};
      ++arrived;
      auto r = conn->Call(MessageType::kBarrier, b.dump(), MessageType::kBarrierDone, 5s);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(arrived.load(), 3);  // nobody is released before the last arrives
    });
  }
  for (auto& t : threads) t.join();
}

TEST(CoordinatorTest, RejectsImpossibleRoleCounts) {
  CoordinatorOptions o;
  o.token = kToken;
  o.num_nodes = 2;
  o.num_ps = 2;
  EXPECT_EQ(Coordinator::Start(o).status().code(), StatusCode::kInvalidArgument);
  o.num_ps = 0;
  o.master_node = "boss";
  EXPECT_EQ(Coordinator::Start(o).status().code(), StatusCode::kInvalidArgument);
}

TEST(FrameDecoderTest, SplitsAndRejects) {
  std::string bytes;
  AppendFrame(MessageType::kHeartbeat, "{\"a\":1}", &bytes);
  AppendFrame(MessageType::kStop, "", &bytes);
  FrameDecoder d;
  Frame f;
  bool have;
  for (char ch : bytes) {  // one byte at a time
    d.Feed({&ch, 1});
  }
  ASSERT_TRUE(d.Next(&f, &have).ok());
  ASSERT_TRUE(have);
  EXPECT_EQ(f.type, MessageType::kHeartbeat);
  EXPECT_EQ(f.payload, "{\"a\":1}");
  ASSERT_TRUE(d.Next(&f, &have).ok());
  EXPECT_EQ(f.type, MessageType::kStop);
  ASSERT_TRUE(d.Next(&f, &have).ok());
  EXPECT_FALSE(have);
  // One flipped byte in each header field.
  for (size_t at : {0u, 4u, 10u}) {
    std::string bad;
    AppendFrame(MessageType::kHeartbeat, "{}", &bad);
    bad[at] ^= 0x40;
    FrameDecoder d2(1024);
    d2.Feed(bad);
    EXPECT_FALSE(d2.Next(&f, &have).ok()) << "flip at " << at;
    EXPECT_FALSE(d2.Next(&f, &have).ok());  // sticky
  }
  EXPECT_TRUE(TokensEqual("abc", "abc"));
  EXPECT_FALSE(TokensEqual("abc", "abd"));
  EXPECT_FALSE(TokensEqual("abc", "abcd"));
}

// What Connection::ReadAvailable does: reads straight into the room Reserve gives.
TEST(FrameDecoderTest, ReservesTheRestOfALargeFrameAndKeepsWhatFollows) {
  std::string big(300000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  std::string bytes;
  AppendFrame(MessageType::kFeedData, big, &bytes);
  AppendFrame(MessageType::kFeedEnd, "{}", &bytes);
  AppendFrame(MessageType::kFeedData, big.substr(0, 1000), &bytes);
  FrameDecoder d;
  std::vector<Frame> got;
  size_t at = 0;
  for (size_t chunk : {5u, 7u, 70000u, 1u}) {  // a split header, then the rest in a read
    std::span<char> room = d.Reserve(chunk);
    ASSERT_GE(room.size(), chunk);
    if (at == 12) {
      EXPECT_GE(room.size(), big.size()) << "the rest of the frame in one read";
    }
    std::memcpy(room.data(), bytes.data() + at, chunk);
    d.Commit(chunk);
    at += chunk;
  }
  while (at < bytes.size()) {
    std::span<char> room = d.Reserve(4096);
    const size_t n = std::min(room.size(), bytes.size() - at);
    std::memcpy(room.data(), bytes.data() + at, n);
    d.Commit(n);
    at += n;
    Frame f;
    bool have = true;
    while (have) {
      ASSERT_TRUE(d.Next(&f, &have).ok());
      if (have) got.push_back(f);
    }
  }
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].payload, big);
  EXPECT_EQ(got[1].type, MessageType::kFeedEnd);
  EXPECT_EQ(got[1].payload, "{}");
  EXPECT_EQ(got[2].payload, big.substr(0, 1000));
  EXPECT_EQ(d.buffered(), 0u);
  // A header that is not a frame's asks for no room by its length field.
  FrameDecoder bad(1 << 20);
  std::string junk(12, '\xff');
  bad.Feed(junk);
  EXPECT_LT(bad.Reserve(16).size(), size_t{1} << 20);
}

TEST(FrameDecoderTest, AViewIsTheFramesPayloadInTheBufferUntilTheNextRead) {
  std::string bytes;
  AppendFrame(MessageType::kFeedData, std::string(5000, 'a'), &bytes);
  AppendFrame(MessageType::kFeedData, std::string(3000, 'b'), &bytes);
  FrameDecoder d;
  d.Feed(bytes);
  FrameView first, second;
  bool have = false;
  ASSERT_TRUE(d.NextView(&first, &have).ok() && have);
  ASSERT_TRUE(d.NextView(&second, &have).ok() && have);
  EXPECT_EQ(first.type, MessageType::kFeedData);
  EXPECT_EQ(first.payload, std::string(5000, 'a'));
  EXPECT_EQ(second.payload, std::string(3000, 'b'));
  // In the decoder's buffer, not copied out: both frames' payloads lie where they were read.
  EXPECT_EQ(second.payload.data(), first.payload.data() + 5000 + kFrameHeaderSize);
  ASSERT_TRUE(d.NextView(&first, &have).ok());
  EXPECT_FALSE(have);
  EXPECT_EQ(d.buffered(), 0u);
}

// A connected, authenticated pair over a Unix socket pair whose buffers hold `bytes`.
std::pair<Connection, Connection> ConnectedPair(int bytes) {
  int fds[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
  for (int fd : fds) {
    EXPECT_EQ(::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes)), 0);
  }
  std::optional<Result<Connection>> client;
  std::thread hello([&] {
    client.emplace(Connection::Handshake(UniqueFd(fds[1]), {"server", 0}, kToken, 5s));
  });
  auto server = Connection::Accept(UniqueFd(fds[0]), {"client", 0}, kToken, 5s);
  hello.join();
  EXPECT_TRUE(server.ok() && client->ok());
  return {std::move(*server), std::move(**client)};
}

TEST(ConnectionTest, ReceiveViewHandsOutEachFrameInTurnAndTheErrorsOfReceive) {
  auto [server, client] = ConnectedPair(1 << 20);
  std::string big(200000, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 13);
  ASSERT_TRUE(client.Send(MessageType::kFeedData, big).ok());
  ASSERT_TRUE(client.Send(MessageType::kFeedEnd, "{}").ok());
  ASSERT_TRUE(client.Send(MessageType::kError,
                          ErrorPayload(Status::Aborted("the task gave up"))).ok());
  auto data = server.ReceiveView(5s);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->type, MessageType::kFeedData);
  EXPECT_EQ(data->payload, big);
  auto end = server.ReceiveView(5s);
  ASSERT_TRUE(end.ok()) << end.status().ToString();
  EXPECT_EQ(end->type, MessageType::kFeedEnd);
  EXPECT_EQ(end->payload, "{}");
  auto error = server.ReceiveView(5s);
  EXPECT_EQ(error.status().code(), StatusCode::kAborted);
  EXPECT_NE(error.status().message().find("the task gave up"), std::string::npos);
  EXPECT_EQ(server.ReceiveView(50ms).status().code(), StatusCode::kDeadlineExceeded);
}

TEST(ConnectionTest, FramesSentBeforeTheCloseAreReceivedBeforeTheClose) {
  // Frames whose bytes fill the reader's room exactly, so that the read which ends them is
  // followed by one that sees the close: they must come out before Unavailable.
  const size_t end_frame = kFrameHeaderSize + 2;
  for (size_t total : {size_t{65536}, size_t{2 * 65536}, size_t{3 * 65536}, size_t{100000}}) {
    for (bool with_end : {false, true}) {
      auto [server, client] = ConnectedPair(1 << 20);
      const std::string payload(total - kFrameHeaderSize - (with_end ? end_frame : 0), 'x');
      ASSERT_TRUE(client.Send(MessageType::kFeedData, payload).ok());
      if (with_end) {
        ASSERT_TRUE(client.Send(MessageType::kFeedEnd, "{}").ok());
      }
      { Connection closed = std::move(client); }
      auto first = server.Receive(5s);
      ASSERT_TRUE(first.ok()) << total << ": " << first.status().ToString();
      EXPECT_EQ(first->payload.size(), payload.size());
      if (with_end) {
        auto end = server.Receive(5s);
        ASSERT_TRUE(end.ok()) << total << ": " << end.status().ToString();
        EXPECT_EQ(end->type, MessageType::kFeedEnd);
      }
      auto after = server.Receive(5s);
      EXPECT_EQ(after.status().code(), StatusCode::kUnavailable) << after.status().ToString();
    }
  }
}

TEST(TokensEqualTest, ComparesWhole) {
  EXPECT_TRUE(TokensEqual("abc", "abc"));
  EXPECT_FALSE(TokensEqual("abc", "abd"));
  EXPECT_FALSE(TokensEqual("abc", "abcd"));
}

}  // namespace
}  // namespace sparktf::cluster
