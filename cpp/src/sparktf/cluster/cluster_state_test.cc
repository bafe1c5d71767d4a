// The coordinator's state machine without sockets or sleeps: frames in, effects out, time
// passed by the test.
#include "sparktf/cluster/cluster_state.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

namespace sparktf::cluster {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

const TimePoint kStart{};  // the fake clock's zero

TEST(TensorFlowRolesTest, TfosOrderAndTheRulesEveryoneReads) {
  struct Want {
    const char* job;
    int index;
    bool chief, fed;
    int feed_index;
    bool serves;
  };
  auto check = [](int n, RoleOptions o, std::vector<Want> want) {
    const auto roles = AssignTensorFlowRoles(n, o);
    ASSERT_EQ(roles.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE("node " + std::to_string(i));
      EXPECT_EQ(roles[i].job_name, want[i].job);
      EXPECT_EQ(roles[i].task_index, want[i].index);
      EXPECT_EQ(roles[i].worker_num, static_cast<int>(i));
      EXPECT_EQ(roles[i].is_chief, want[i].chief);
      EXPECT_EQ(roles[i].fed, want[i].fed);
      EXPECT_EQ(roles[i].feed_index, want[i].feed_index);
      EXPECT_EQ(roles[i].serves_until_stopped, want[i].serves);
    }
  };
  // MultiWorkerMirrored without a chief: worker 0 writes.
  check(3, {}, {{"worker", 0, true, true, 0, false},
                {"worker", 1, false, true, 1, false},
                {"worker", 2, false, true, 2, false}});
  // A chief among workers is fed first.
  check(3, {0, "chief", false}, {{"chief", 0, true, true, 0, false},
                                 {"worker", 0, false, true, 1, false},
                                 {"worker", 1, false, true, 2, false}});
  // ParameterServerStrategy: ps, chief, evaluator, workers; workers serve the chief.
  check(5, {1, "chief", true}, {{"ps", 0, false, false, -1, true},
                                {"chief", 0, true, true, 0, false},
                                {"evaluator", 0, false, false, -1, true},
                                {"worker", 0, false, true, 1, true},
                                {"worker", 1, false, true, 2, true}});
  // ps without a chief: workers are not servers (TFoS's old between-graph style).
  check(3, {1, "", false}, {{"ps", 0, false, false, -1, true},
                            {"worker", 0, true, true, 0, false},
                            {"worker", 1, false, true, 1, false}});
}

// A cluster driven frame by frame. Connection i is node i's agent unless said otherwise.
class ClusterStateTest : public ::testing::Test {
 protected:
  void Make(int nodes, RoleOptions roles = {}) {
    ClusterOptions o;
    o.num_nodes = nodes;
    o.roles = roles;
    o.heartbeat_timeout = 10s;
    o.straggler_fraction = 0.5;
    o.straggler_after = 5s;
    state_ = std::make_unique<ClusterState>(o, kStart);
  }
  Effects Send(int conn, MessageType type, const json& payload, TimePoint at = kStart) {
    Effects fx;
    state_->OnFrame(conn, Frame{type, payload.dump()}, at, &fx);
    return fx;
  }
  Effects Register(int executor, TimePoint at = kStart) {
    return Send(executor, MessageType::kRegister,
                {{"executor_id", executor}, {"host", "h" + std::to_string(executor)},
                 {"port", 1000 + executor}},
                at);
  }
  void FormCluster(int nodes, RoleOptions roles = {}) {
    Make(nodes, roles);
    for (int i = 0; i < nodes; ++i) Register(i);
    ASSERT_TRUE(state_->reserved());
  }
  static std::vector<const Effects::Message*> Of(const Effects& fx, MessageType type) {
    std::vector<const Effects::Message*> out;
    for (const auto& m : fx.messages) {
      if (m.type == type) out.push_back(&m);
    }
    return out;
  }
  json FeedSync(int executor, uint64_t delivered, bool closed) {
    Effects fx = Send(100 + executor, MessageType::kFeedSync,
                      {{"executor_id", executor}, {"qname", "input"},
                       {"delivered", delivered}, {"closed", closed}});
    auto answers = Of(fx, MessageType::kFeedState);
    if (answers.size() != 1) return json{{"error", fx.messages.empty() ? "" : fx.messages[0].payload}};
    EXPECT_EQ(answers[0]->conn, 100 + executor);
    return json::parse(answers[0]->payload);
  }
  // `field` of node `executor`'s entry in the status; null if it has none.
  json NodeStatus(int executor, const char* field) const {
    const json status = json::parse(state_->StatusJson());
    for (const auto& n : status["nodes"]) {
      if (n["executor_id"] == executor) return n[field];
    }
    return json();
  }

  std::unique_ptr<ClusterState> state_;
};

TEST_F(ClusterStateTest, FormsTheClusterWhenTheLastNodeRegistersAndAnswersWaiters) {
  Make(2, {0, "chief", false});
  Register(1);
  Effects fx = Send(1, MessageType::kAwaitCluster, json::object());
  EXPECT_TRUE(fx.messages.empty());  // waits for the others
  EXPECT_EQ(state_->ClusterJson(), "{}");
  fx = Register(0);
  auto specs = Of(fx, MessageType::kClusterSpec);
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_EQ(specs[0]->conn, 1);
  json info = json::parse(specs[0]->payload);
  EXPECT_EQ(info["job_name"], "worker");
  EXPECT_EQ(info["task_index"], 0);
  EXPECT_EQ(info["is_chief"], false);
  EXPECT_EQ(info["feed_index"], 1);
  EXPECT_EQ(info["num_workers"], 2);
  json tf_config = json::parse(info["tf_config"].get<std::string>());
  EXPECT_EQ(tf_config["cluster"]["chief"], json::array({"h0:1000"}));
  EXPECT_EQ(tf_config["cluster"]["worker"], json::array({"h1:1001"}));
  EXPECT_EQ(tf_config["task"], (json{{"type", "worker"}, {"index", 0}}));
  // A node that asks after the cluster formed is answered at once.
  fx = Send(0, MessageType::kAwaitCluster, json::object());
  ASSERT_EQ(Of(fx, MessageType::kClusterSpec).size(), 1u);
  EXPECT_EQ(json::parse(fx.messages[0].payload)["is_chief"], true);
}

TEST_F(ClusterStateTest, RegistrationAfterTheClusterFormedIsRefused) {
  FormCluster(2);
  Effects fx = Send(7, MessageType::kRegister, {{"executor_id", 1}, {"host", "h"}, {"port", 1}});
  ASSERT_EQ(fx.messages.size(), 1u);
  EXPECT_EQ(fx.messages[0].type, MessageType::kError);
  EXPECT_NE(fx.messages[0].payload.find("registered after the cluster was formed"),
            std::string::npos);
  EXPECT_EQ(fx.close, std::vector<int>{7});
  EXPECT_EQ(state_->rejected_connections(), 1);
}

TEST_F(ClusterStateTest, ATypeMismatchInAnExitReportIsAFailureNotACrash) {
  FormCluster(1);
  Effects fx = Send(0, MessageType::kReportExit, {{"exit_code", "zero"}, {"signal", 1.5}});
  ASSERT_EQ(Of(fx, MessageType::kReportAck).size(), 1u);
  EXPECT_TRUE(state_->aborted());  // exit code unknown (-1): a failure
}

TEST_F(ClusterStateTest, MistypedFieldsMeanDefaultsNeverAnException) {
  Make(2);
  Effects fx = Send(0, MessageType::kRegister, {{"executor_id", 0}, {"host", "h0"},
                                               {"port", 1}, {"pid", "x"}, {"feed_port", 2.5},
                                               {"container", 7}, {"generation", "0"}});
  ASSERT_EQ(Of(fx, MessageType::kRegistered).size(), 1u);
  Send(0, MessageType::kHeartbeat, {{"state", 5}, {"tensorboard", 1}});
  Send(0, MessageType::kHeartbeat, json::array({1, 2}));
  Register(1);
  json status = json::parse(state_->StatusJson());
  EXPECT_EQ(status["nodes"][0]["phase"], "registered");  // not "running"
  EXPECT_EQ(status["nodes"][0]["pid"], 0);
  fx = Send(0, MessageType::kBarrier, {{"name", "b"}, {"executor_id", 0}, {"count", "all"}});
  EXPECT_TRUE(fx.messages.empty());  // waits for all (the default count)
}

TEST_F(ClusterStateTest, ASilentNodeIsLostAfterTheHeartbeatTimeoutAndNamed) {
  FormCluster(2);
  Effects fx;
  state_->OnTick(kStart + 9s, &fx);
  EXPECT_FALSE(state_->aborted());
  Send(0, MessageType::kHeartbeat, {{"state", "running"}}, kStart + 9s);
  state_->OnTick(kStart + 10500ms, &fx);
  ASSERT_TRUE(state_->aborted());
  EXPECT_NE(state_->abort_reason().find("worker:1 (executor 1 on h1) sent no heartbeat for 10 s"),
            std::string::npos)
      << state_->abort_reason();
  EXPECT_EQ(fx.close, std::vector<int>{1});
  auto aborts = Of(fx, MessageType::kAbort);
  ASSERT_EQ(aborts.size(), 1u);  // the other node is told; the lost one is closed
  EXPECT_EQ(aborts[0]->conn, 0);
}

TEST_F(ClusterStateTest, AConnectionClosedWithoutAnExitReportAbortsNamingTheNode) {
  FormCluster(3);
  Effects fx;
  state_->OnClosed(2, &fx);
  ASSERT_TRUE(state_->aborted());
  EXPECT_NE(state_->abort_reason().find("worker:2 (executor 2 on h2) was lost"),
            std::string::npos);
  EXPECT_EQ(Of(fx, MessageType::kAbort).size(), 2u);
  // A clean exit is no loss.
  FormCluster(1);
  Send(0, MessageType::kReportExit, {{"exit_code", 0}});
  state_->OnClosed(0, &fx);
  EXPECT_FALSE(state_->aborted());
}

TEST_F(ClusterStateTest, AFailedNodeAbortsWithItsTracebackAndReleasesBarrierWaiters) {
  FormCluster(3);
  Send(0, MessageType::kBarrier, {{"name", "b"}, {"executor_id", 0}});
  Send(1, MessageType::kBarrier, {{"name", "b"}, {"executor_id", 1}});
  Effects fx = Send(2, MessageType::kReportExit,
                    {{"exit_code", 1}, {"traceback", "ValueError: boom"}});
  ASSERT_TRUE(state_->aborted());
  EXPECT_EQ(state_->abort_reason(),
            "worker:2 (executor 2 on h2) failed with exit code 1:\nValueError: boom");
  auto errors = Of(fx, MessageType::kError);
  ASSERT_EQ(errors.size(), 2u);  // both barrier waiters fail instead of hanging
  EXPECT_NE(errors[0]->payload.find("cluster aborted"), std::string::npos);
  // A barrier asked for after the abort fails at once.
  fx = Send(0, MessageType::kBarrier, {{"name", "c"}, {"executor_id", 0}});
  EXPECT_EQ(Of(fx, MessageType::kError).size(), 1u);
}

TEST_F(ClusterStateTest, BarrierReleasesEveryWaiterOnceAllArrived) {
  FormCluster(2);
  Effects fx = Send(0, MessageType::kBarrier, {{"name", "b"}, {"executor_id", 0}});
  EXPECT_TRUE(fx.messages.empty());
  fx = Send(0, MessageType::kBarrier, {{"name", "b"}, {"executor_id", 0}});  // again: once
  EXPECT_TRUE(fx.messages.empty());
  fx = Send(1, MessageType::kBarrier, {{"name", "b"}, {"executor_id", 1}});
  EXPECT_EQ(Of(fx, MessageType::kBarrierDone).size(), 3u);
}

TEST_F(ClusterStateTest, ServicesAreStoppedWhenTheWorkersAreDoneThenTheClusterFinishes) {
  FormCluster(3, {1, "chief", false});  // ps, chief, worker (which serves the chief)
  Effects fx = Send(1, MessageType::kReportExit, {{"exit_code", 0}});  // the chief is done
  auto stops = Of(fx, MessageType::kStop);
  ASSERT_EQ(stops.size(), 2u);
  EXPECT_EQ(stops[0]->conn, 0);
  EXPECT_EQ(stops[1]->conn, 2);
  EXPECT_FALSE(state_->finished());
  Send(0, MessageType::kReportExit, {{"exit_code", 0}, {"stopped", true}});
  EXPECT_FALSE(state_->finished());
  fx = Send(2, MessageType::kReportExit, {{"exit_code", 143}, {"stopped", true}});
  EXPECT_TRUE(state_->finished());
  EXPECT_FALSE(state_->aborted());  // stopped on request is no failure
  EXPECT_TRUE(Of(fx, MessageType::kStop).empty());  // once
}

TEST_F(ClusterStateTest, AnEvaluatorGetsItsGraceOnceTheWorkersAreDone) {
  FormCluster(3, {1, "chief", true});  // ps, chief, evaluator
  state_->SetEvaluatorGrace(5s);  // (under the 10 s heartbeat timeout of the ticks below)
  Effects fx = Send(1, MessageType::kReportExit, {{"exit_code", 0}}, kStart + 1s);
  auto stops = Of(fx, MessageType::kStop);
  ASSERT_EQ(stops.size(), 1u);  // the ps at once
  EXPECT_EQ(stops[0]->conn, 0);
  fx = {};
  state_->OnTick(kStart + 5500ms, &fx);
  EXPECT_TRUE(Of(fx, MessageType::kStop).empty());  // 4.5 s into its grace
  fx = {};
  state_->OnTick(kStart + 6s, &fx);
  stops = Of(fx, MessageType::kStop);
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0]->conn, 2);
  fx = {};
  state_->OnTick(kStart + 7s, &fx);
  EXPECT_TRUE(Of(fx, MessageType::kStop).empty());  // once
  EXPECT_FALSE(state_->aborted());
}

TEST_F(ClusterStateTest, AnEvaluatorThatEndsWithinItsGraceIsNeverStopped) {
  FormCluster(2, {0, "chief", true});  // chief, evaluator
  state_->SetEvaluatorGrace(60s);
  Effects fx = Send(0, MessageType::kReportExit, {{"exit_code", 0}});
  EXPECT_TRUE(Of(fx, MessageType::kStop).empty());
  fx = Send(1, MessageType::kReportExit, {{"exit_code", 0}}, kStart + 5s);
  EXPECT_TRUE(Of(fx, MessageType::kStop).empty());
  EXPECT_TRUE(state_->finished());
  // Without a grace, it is stopped with the workers' end, as before.
  FormCluster(2, {0, "chief", true});
  fx = Send(0, MessageType::kReportExit, {{"exit_code", 0}});
  ASSERT_EQ(Of(fx, MessageType::kStop).size(), 1u);
}

// Lockstep end of data (design 3a): the watermark is the minimum over every fed node.
TEST_F(ClusterStateTest, FeedSyncWatermarkCoversEveryFedNode) {
  FormCluster(4, {0, "chief", false});  // chief and 3 workers
  json s = FeedSync(0, 10, false);
  EXPECT_EQ(s, (json{{"min_delivered", 0}, {"all_closed", false}}));  // others unheard
  FeedSync(1, 7, false);
  FeedSync(2, 12, false);
  s = FeedSync(3, 9, false);
  EXPECT_EQ(s["min_delivered"], 7);
  EXPECT_EQ(s["all_closed"], false);
  FeedSync(0, 10, true);
  FeedSync(1, 8, true);
  FeedSync(2, 12, true);
  s = FeedSync(3, 9, true);
  EXPECT_EQ(s, (json{{"min_delivered", 8}, {"all_closed", true}}));
}

TEST_F(ClusterStateTest, AWorkerThatReceivesNoDataHoldsEveryoneAtZero) {
  FormCluster(3);
  FeedSync(0, 5, true);
  FeedSync(1, 6, true);
  json s = FeedSync(2, 0, true);  // its partitions were empty
  EXPECT_EQ(s, (json{{"min_delivered", 0}, {"all_closed", true}}));
}

TEST_F(ClusterStateTest, FeedAssignKeepsPartitionsOnTheirHostWithinEachNodesShare) {
  Make(4);
  for (int i = 0; i < 4; ++i) {  // executors 0, 1 on host "a"; 2, 3 on host "b"
    Send(i, MessageType::kRegister,
         {{"executor_id", i}, {"host", i < 2 ? "a" : "b"}, {"port", 1000 + i}});
  }
  ASSERT_TRUE(state_->reserved());
  const auto assign = [&](uint64_t feed, int partition, const std::string& host) {
    Effects fx = Send(200, MessageType::kFeedAssign,
                      {{"feed", feed}, {"partition", partition}, {"partitions", 8},
                       {"host", host}});
    auto answers = Of(fx, MessageType::kFeedTarget);
    if (answers.size() != 1) return -1;
    return json::parse(answers[0]->payload)["executor_id"].get<int>();
  };
  // Tasks where Spark ran them: four on each host. Every partition stays on its host,
  // two per node.
  std::map<int, int> count;
  for (int p = 0; p < 8; ++p) {
    const int e = assign(7, p, p % 2 ? "b" : "a");
    ASSERT_GE(e, 0);
    EXPECT_EQ(e < 2, p % 2 == 0) << "partition " << p << " crossed hosts to " << e;
    ++count[e];
  }
  EXPECT_EQ(count, (std::map<int, int>{{0, 2}, {1, 2}, {2, 2}, {3, 2}}));
  // A retried task goes where the partition went, from whichever host.
  const int first = assign(7, 3, "b");
  EXPECT_EQ(assign(7, 3, "a"), first);
  // Another job, every task on host "a": its nodes take their share, the rest crosses.
  count.clear();
  int crossed = 0;
  for (int p = 0; p < 8; ++p) {
    const int e = assign(8, p, "a");
    crossed += e >= 2;
    ++count[e];
  }
  EXPECT_EQ(crossed, 4);
  EXPECT_EQ(count, (std::map<int, int>{{0, 2}, {1, 2}, {2, 2}, {3, 2}}));
  // A host with no node: the fewest first.
  EXPECT_EQ(assign(9, 0, "c"), 0);
  EXPECT_EQ(assign(9, 1, "c"), 1);
  EXPECT_EQ(assign(9, 2, "a"), 0);  // a's nodes have 1 each, under ceil(8/4) = 2
  EXPECT_EQ(assign(9, 5, "a"), 1);
  EXPECT_EQ(assign(9, 6, "a"), 2);  // a's nodes are full
  EXPECT_EQ(assign(9, 8, "a"), -1);  // outside 0..7
  Effects bad = Send(201, MessageType::kFeedAssign, {{"feed", 1}, {"partition", 0}});
  ASSERT_FALSE(Of(bad, MessageType::kError).empty());
  EXPECT_NE(Of(bad, MessageType::kError)[0]->payload.find("FEED_ASSIGN needs"),
            std::string::npos);
}

TEST_F(ClusterStateTest, FeedSyncFromANodeThatIsNotFedIsRefused) {
  FormCluster(3, {1, "", false});  // ps, worker, worker
  json s = FeedSync(0, 1, false);
  EXPECT_NE(s.value("error", "").find("not a worker of this cluster"), std::string::npos) << s;
  // The ps does not count: the watermark is over the two workers.
  FeedSync(1, 4, true);
  s = FeedSync(2, 3, true);
  EXPECT_EQ(s, (json{{"min_delivered", 3}, {"all_closed", true}}));
}

TEST_F(ClusterStateTest, ARestartFormsANewGenerationAndRefusesTheOldOne) {
  FormCluster(2);
  Effects fx = Send(1, MessageType::kReportExit, {{"exit_code", 137}, {"signal", 9}});
  ASSERT_TRUE(state_->aborted());
  fx = Effects{};
  state_->Restart(kStart + 5s, &fx);
  EXPECT_EQ(state_->generation(), 1);
  EXPECT_FALSE(state_->aborted() || state_->reserved() || state_->finished());
  std::sort(fx.close.begin(), fx.close.end());
  EXPECT_EQ(fx.close, (std::vector<int>{0, 1}));  // the old agents' connections
  EXPECT_EQ(state_->ClusterJson(), "{}");

  // A late node of generation 0 is refused and counted; generation 1 forms the cluster.
  fx = Register(0);
  ASSERT_EQ(Of(fx, MessageType::kError).size(), 1u);
  EXPECT_NE(fx.messages[0].payload.find("REGISTER of generation 0, but the cluster is at "
                                        "generation 1"),
            std::string::npos)
      << fx.messages[0].payload;
  EXPECT_EQ(state_->stale_messages(), 1);
  for (int i = 0; i < 2; ++i) {
    fx = Send(10 + i, MessageType::kRegister,
              {{"executor_id", i}, {"host", "h"}, {"port", 1}, {"generation", 1}});
    ASSERT_EQ(Of(fx, MessageType::kRegistered).size(), 1u);
  }
  ASSERT_TRUE(state_->reserved());
  fx = Send(10, MessageType::kAwaitCluster, json::object());
  EXPECT_EQ(json::parse(fx.messages.at(0).payload)["generation"], 1);
  fx = Send(20, MessageType::kBarrier, {{"name", "b"}, {"executor_id", 0}});  // generation 0
  EXPECT_EQ(Of(fx, MessageType::kError).size(), 1u);
  EXPECT_EQ(state_->stale_messages(), 2);
  // The reservation clock restarted with the generation.
  EXPECT_NE(state_->ReservationTimeoutMessage(kStart + 8s, 1).find("after 3 s"),
            std::string::npos);
  EXPECT_EQ(json::parse(state_->StatusJson())["generation"], 1);
}

TEST_F(ClusterStateTest, ReservationTimeoutMessageNamesTheMissingAndTheWholeWait) {
  Make(3);
  Register(1);
  const std::string m = state_->ReservationTimeoutMessage(kStart + 42s, 4711);
  EXPECT_NE(m.find("after 42 s: 1 of 3 nodes registered; missing executors: 0, 2"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("on port 4711"), std::string::npos);
}

TEST_F(ClusterStateTest, NodeOutputIsHandedOnInOrderNamedByTheNodesRole) {
  FormCluster(2, {0, "chief", false});
  Effects fx = Send(1, MessageType::kNodeOutput,
                    {{"lines", json::parse(R"([["stdout", "epoch 1"], ["stderr", "a warning"]])")}});
  EXPECT_TRUE(fx.messages.empty());
  ASSERT_EQ(fx.output.size(), 2u);
  EXPECT_EQ(fx.output[0].node, "worker:0");
  EXPECT_EQ(fx.output[0].stream, "stdout");
  EXPECT_EQ(fx.output[0].text, "epoch 1");
  EXPECT_EQ(fx.output[1].stream, "stderr");
  EXPECT_EQ(fx.output[1].text, "a warning");
  EXPECT_EQ(fx.output[1].generation, 0);
  fx = Send(0, MessageType::kNodeOutput, {{"lines", json::parse(R"([["stdout", "x"]])")}});
  ASSERT_EQ(fx.output.size(), 1u);
  EXPECT_EQ(fx.output[0].node, "chief:0");
}

TEST_F(ClusterStateTest, NodeOutputFromAStrangerOrMalformedOrStaleIsRefused) {
  FormCluster(2);
  Effects fx = Send(9, MessageType::kNodeOutput, {{"lines", json::parse(R"([["stdout", "x"]])")}});
  EXPECT_EQ(Of(fx, MessageType::kError).size(), 1u);  // no node registered on conn 9
  EXPECT_TRUE(fx.output.empty());
  for (const json& bad : {json{{"lines", "x"}}, json{{"lines", json::parse(R"([["stdin", "x"]])")}},
                          json{{"lines", json::parse(R"([["stdout", 3]])")}}, json{{"nolines", 1}}}) {
    fx = Send(1, MessageType::kNodeOutput, bad);
    EXPECT_EQ(Of(fx, MessageType::kError).size(), 1u) << bad;
    EXPECT_TRUE(fx.output.empty()) << bad;
  }
  fx = Send(0, MessageType::kNodeOutput, {{"generation", 3}, {"lines", json::parse(R"([["stdout", "x"]])")}});
  EXPECT_EQ(Of(fx, MessageType::kError).size(), 1u);
  EXPECT_TRUE(fx.output.empty());
}

TEST_F(ClusterStateTest, NodeMetricsAreTheLastReportWithAStepRateInTheStatus) {
  FormCluster(2);
  auto training = [&](int node) { return NodeStatus(node, "training"); };
  EXPECT_TRUE(training(0).is_null());
  Effects fx = Send(0, MessageType::kNodeMetrics,
                    {{"step", 100}, {"epoch", 1},
                     {"metrics", {{"loss", 0.5}, {"accuracy", 0.75}, {"note", "x"}}}},
                    kStart);
  EXPECT_TRUE(fx.messages.empty());
  json t = training(0);
  EXPECT_EQ(t["step"], 100);
  EXPECT_EQ(t["epoch"], 1);
  EXPECT_EQ(t["metrics"], (json{{"loss", 0.5}, {"accuracy", 0.75}}));  // numbers only
  EXPECT_TRUE(t["steps_per_sec"].is_null());  // one report: no rate yet
  Send(0, MessageType::kNodeMetrics, {{"step", 300}, {"metrics", {{"loss", 0.25}}}},
       kStart + 2s);
  t = training(0);
  EXPECT_EQ(t["step"], 300);
  EXPECT_DOUBLE_EQ(t["steps_per_sec"].get<double>(), 100.0);
  EXPECT_EQ(t["metrics"], (json{{"loss", 0.25}}));
  EXPECT_TRUE(t["examples_per_sec"].is_null());  // no batch size said
  Send(0, MessageType::kNodeMetrics, {{"step", 500}, {"metrics", {{"batch_size", 32}}}},
       kStart + 4s);
  EXPECT_DOUBLE_EQ(training(0)["examples_per_sec"].get<double>(), 100.0 * 32);
  EXPECT_EQ(training(0)["batch_size"], 32);
  EXPECT_EQ(training(0)["metrics"], json::object());
  EXPECT_TRUE(training(1).is_null());
  for (const json& bad : {json{{"epoch", 1}}, json{{"step", "3"}},
                          json{{"step", 3}, {"metrics", 1}}}) {
    fx = Send(1, MessageType::kNodeMetrics, bad);
    EXPECT_EQ(Of(fx, MessageType::kError).size(), 1u) << bad;
  }
  fx = Send(0, MessageType::kNodeMetrics, {{"step", 1}, {"generation", 2}});
  EXPECT_EQ(Of(fx, MessageType::kError).size(), 1u);
  EXPECT_EQ(training(0)["step"], 500);
}

TEST_F(ClusterStateTest, AWorkerUnderHalfTheMedianRateForLongEnoughIsAStraggler) {
  FormCluster(4, {1, "", false});  // a ps (never a straggler), 3 workers
  // Each second: the ps 1 step, workers 1 and 2 100 steps, worker 3 (executor 3) 40.
  const std::map<int, int> per_second = {{0, 1}, {1, 100}, {2, 100}, {3, 40}};
  auto second = [&](int t) {
    Effects fx;
    for (const auto& [node, n] : per_second) {
      Send(node, MessageType::kHeartbeat, {{"state", "running"}}, kStart + std::chrono::seconds(t));
      Send(node, MessageType::kNodeMetrics, {{"step", t * n}}, kStart + std::chrono::seconds(t));
    }
    state_->OnTick(kStart + std::chrono::seconds(t), &fx);
    return fx;
  };
  auto stragglers = [&] {
    std::vector<int> out;
    const json status = json::parse(state_->StatusJson());
    for (const auto& n : status["nodes"]) {
      if (n["straggler"] == true) out.push_back(n["executor_id"]);
    }
    return out;
  };
  std::vector<std::string> warnings;
  for (int t = 0; t <= 6; ++t) {
    Effects fx = second(t);
    warnings.insert(warnings.end(), fx.warnings.begin(), fx.warnings.end());
    if (t < 6) {
      EXPECT_TRUE(stragglers().empty()) << t;  // slow since t=1: 5 s at t=6
    }
  }
  EXPECT_EQ(stragglers(), std::vector<int>{3});
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "worker:2 (executor 3 on h3) is a straggler: 40.0 steps/s against a median of "
            "100.0 over the 3 training nodes (under 50.0% of it for 5 s)");
  EXPECT_TRUE(second(7).warnings.empty());  // warned once
  // It catches up: no longer a straggler, said once.
  Effects fx;
  Send(3, MessageType::kNodeMetrics, {{"step", 7 * 40 + 200}}, kStart + 9s);
  state_->OnTick(kStart + 9s, &fx);
  EXPECT_TRUE(stragglers().empty());
  ASSERT_EQ(fx.warnings.size(), 1u);
  EXPECT_NE(fx.warnings[0].find("worker:2 (executor 3 on h3) is no longer a straggler"),
            std::string::npos)
      << fx.warnings[0];
}

TEST_F(ClusterStateTest, AShortDipIsNoStragglerAndAFractionOfZeroTurnsItOff) {
  auto report = [&](int node, int step, std::chrono::seconds t) {
    Send(node, MessageType::kHeartbeat, {{"state", "running"}}, kStart + t);
    Send(node, MessageType::kNodeMetrics, {{"step", step}}, kStart + t);
  };
  auto warnings_at = [&](std::chrono::seconds t) {
    Effects fx;
    state_->OnTick(kStart + t, &fx);
    return fx.warnings;
  };
  FormCluster(2);
  report(0, 0, 0s);
  report(1, 0, 0s);
  report(0, 100, 1s);
  report(1, 10, 1s);  // 10 steps/s against 100: slow, for 4 s only
  for (int t = 1; t <= 4; ++t) {
    EXPECT_TRUE(warnings_at(std::chrono::seconds(t)).empty()) << t;
  }
  report(0, 500, 5s);
  report(1, 400, 5s);  // 97.5 steps/s
  EXPECT_TRUE(warnings_at(8s).empty());
  EXPECT_TRUE(warnings_at(9s).empty());
  // The same slow node (1 step/s against 100) with stragglers off, and on: the control.
  auto slow_node_warnings = [&](double fraction) {
    ClusterOptions o;
    o.num_nodes = 2;
    o.straggler_fraction = fraction;
    o.straggler_after = 0s;
    state_ = std::make_unique<ClusterState>(o, kStart);
    for (int i = 0; i < 2; ++i) Register(i);
    report(0, 0, 0s);
    report(1, 0, 0s);
    report(0, 100, 1s);
    report(1, 1, 1s);
    return warnings_at(5s).size();
  };
  EXPECT_EQ(slow_node_warnings(0), 0u);
  EXPECT_EQ(slow_node_warnings(0.5), 1u);
}

TEST_F(ClusterStateTest, FeedReportsGiveEachNodesInputWithRatesStallAndTotals) {
  FormCluster(2);
  auto sync = [&](int executor, uint64_t consumed, uint64_t wait_us, TimePoint at,
                  const char* qname = "input") {
    Send(100 + executor, MessageType::kFeedSync,
         {{"executor_id", executor}, {"qname", qname}, {"delivered", consumed + 64},
          {"closed", false}, {"consumed", consumed}, {"dropped", 2}, {"batches", consumed / 32},
          {"wait_us", wait_us}, {"ring_fill", 0.25}},
         at);
  };
  auto input = [&](int node) { return NodeStatus(node, "input"); };
  EXPECT_TRUE(input(0).is_null());
  sync(0, 320, 100000, kStart + 1s);
  json in = input(0);
  EXPECT_EQ(in["rows_fed"], 384);
  EXPECT_EQ(in["rows_taken"], 320);
  EXPECT_EQ(in["rows_dropped"], 2);
  EXPECT_EQ(in["batches"], 10);
  EXPECT_DOUBLE_EQ(in["ring_fill"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(in["wait_s"].get<double>(), 0.1);
  EXPECT_TRUE(in["rows_per_sec"].is_null());  // one report: no rate yet
  // 2 s later: 640 more rows, 0.5 s more waiting = a quarter of the time stalled.
  sync(0, 960, 600000, kStart + 3s);
  in = input(0);
  EXPECT_DOUBLE_EQ(in["rows_per_sec"].get<double>(), 320.0);
  EXPECT_DOUBLE_EQ(in["stall"].get<double>(), 0.25);
  sync(0, 990, 600000, kStart + 3200ms);  // too soon for a rate: the last one stays
  EXPECT_DOUBLE_EQ(input(0)["rows_per_sec"].get<double>(), 320.0);
  EXPECT_EQ(input(0)["rows_taken"], 960);
  sync(0, 10, 1000, kStart + 5s, "epoch2");  // another feed: counters start over
  EXPECT_TRUE(input(0)["rows_per_sec"].is_null());
  sync(1, 100, 0, kStart + 5s);
  const json status = json::parse(state_->StatusJson());
  EXPECT_EQ(status["totals"]["rows_taken"], 110);
  EXPECT_EQ(status["totals"]["rows_fed"], 74 + 164);
  EXPECT_EQ(status["totals"]["nodes"]["registered"], 2);
  EXPECT_EQ(status["nodes"][0]["name"], "worker:0");
}

TEST_F(ClusterStateTest, HistoryTakesASampleEveryIntervalAndKeepsTheLastOnes) {
  FormCluster(2);
  Effects fx;
  Send(0, MessageType::kNodeMetrics, {{"step", 10}, {"metrics", {{"loss", 2.0}}}}, kStart);
  state_->OnTick(kStart, &fx);
  Send(0, MessageType::kNodeMetrics, {{"step", 30}, {"metrics", {{"loss", 1.0}}}},
       kStart + 1s);
  state_->OnTick(kStart + 1s, &fx);  // within the interval: no sample
  state_->OnTick(kStart + kHistoryInterval, &fx);
  json h = json::parse(state_->HistoryJson());
  ASSERT_EQ(h["samples"].size(), 2u);
  EXPECT_DOUBLE_EQ(h["samples"][0]["t"].get<double>(), 0.0);
  EXPECT_EQ(h["samples"][0]["nodes"]["worker:0"]["step"], 10);
  EXPECT_EQ(h["samples"][1]["nodes"]["worker:0"]["step"], 30);
  EXPECT_DOUBLE_EQ(h["samples"][1]["nodes"]["worker:0"]["loss"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(h["samples"][1]["nodes"]["worker:0"]["steps_per_sec"].get<double>(), 20.0);
  EXPECT_TRUE(h["samples"][1]["nodes"]["worker:1"]["step"].is_null());
  for (size_t i = 2; i < kHistoryPoints + 5; ++i) {
    state_->OnTick(kStart + kHistoryInterval * static_cast<int>(i), &fx);
  }
  h = json::parse(state_->HistoryJson());
  ASSERT_EQ(h["samples"].size(), kHistoryPoints);  // the oldest are gone, in order
  const double interval = std::chrono::duration<double>(kHistoryInterval).count();
  EXPECT_DOUBLE_EQ(h["samples"][0]["t"].get<double>(), 5 * interval);
  EXPECT_DOUBLE_EQ(h["samples"][kHistoryPoints - 1]["t"].get<double>(),
                   (kHistoryPoints + 4) * interval);
}

}  // namespace
}  // namespace sparktf::cluster
