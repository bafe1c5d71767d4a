#include "sparktf/node/feed_task.h"

#include <cstdlib>
#include <nlohmann/json.hpp>

#include "sparktf/cluster/protocol.h"

namespace sparktf::node {

using cluster::Connection;
using cluster::Frame;
using cluster::MessageType;
using nlohmann::json;

Result<std::pair<int, std::string>> AssignFeedTarget(const HostPort& coordinator,
                                                     const std::string& token, uint64_t feed,
                                                     int64_t partition, int64_t partitions,
                                                     int generation,
                                                     std::chrono::milliseconds timeout) {
  const char* local_ip = std::getenv("SPARK_LOCAL_IP");
  ASSIGN_OR_RETURN(Connection conn,
                   Connection::Open(coordinator, token, timeout, local_ip ? local_ip : ""));
  const std::string host = LocalAddress(conn.fd());
  const std::string request = json{{"feed", feed}, {"partition", partition},
                                   {"partitions", partitions}, {"host", host},
                                   {"generation", generation}}.dump();
  ASSIGN_OR_RETURN(Frame f, conn.Call(MessageType::kFeedAssign, request,
                                      MessageType::kFeedTarget, timeout));
  const auto reply = json::parse(f.payload, nullptr, false);
  if (!reply.is_object() || !reply.contains("executor_id") ||
      !reply["executor_id"].is_number_integer()) {
    return Status::Internal("FEED_TARGET without an executor_id: " + f.payload);
  }
  return std::make_pair(reply["executor_id"].get<int>(), host);
}

namespace {

int64_t IntOr0(const json& v) { return v.is_number() ? v.get<int64_t>() : 0; }

}  // namespace

std::optional<std::string> NodeFailure(const HostPort& coordinator, const std::string& token,
                                       int executor_id, std::chrono::milliseconds timeout) {
  Result<Frame> f = [&]() -> Result<Frame> {
    ASSIGN_OR_RETURN(Connection conn, Connection::Open(coordinator, token, timeout));
    return conn.Call(MessageType::kGetStatus, "{}", MessageType::kStatus, timeout);
  }();
  if (!f.ok()) return "the cluster's coordinator is gone (the cluster was shut down or aborted)";
  const auto status = json::parse(f->payload, nullptr, false);
  if (!status.is_object()) return std::nullopt;
  if (status.value("aborted", false)) {  // the first failure, not this node's stop
    return "the cluster was aborted: " + status.value("abort_reason", std::string());
  }
  for (const auto& n : status.value("nodes", json::array())) {
    if (!n.is_object() || IntOr0(n.value("executor_id", json())) != executor_id) continue;
    const std::string phase = n.value("phase", std::string());
    const int64_t code = IntOr0(n.value("exit_code", json()));
    const int64_t signal = IntOr0(n.value("signal", json()));
    if (phase == "exited" && code == 0 && signal == 0) return std::string();
    if (phase == "exited" || phase == "lost") {
      const json tb = n.value("traceback", json());
      const std::string traceback = tb.is_string() ? tb.get<std::string>() : "";
      return "it " + phase + " (exit code " + std::to_string(code) + ", signal " +
             std::to_string(signal) + ")" + (traceback.empty() ? "" : ":\n" + traceback);
    }
  }
  return std::nullopt;
}

Result<FeedJob> FeedJob::Parse(std::string_view text) {
  const auto j = json::parse(text, nullptr, false);
  if (!j.is_object()) return Status::InvalidArgument("feed job: not a JSON object");
  FeedJob job;
  try {
    job.cluster_id = j.at("cluster_id").get<std::string>();
    job.token = j.at("token").get<std::string>();
    job.qname = j.at("qname").get<std::string>();
    job.coordinator = j.at("coordinator").get<std::string>();
    job.feed_id = j.at("feed_id").get<uint64_t>();
    job.timeout = std::chrono::milliseconds(
        static_cast<int64_t>(j.at("feed_timeout").get<double>() * 1000));
    job.generation = j.value("generation", 0);
    job.partitions = j.value("partitions", int64_t{0});
    job.modulo = j.value("placement", std::string("local")) == "modulo";
    job.force_tcp = j.value("transport", std::string("auto")) == "tcp";
    const auto sched = j.value("feeder_sched", std::string("batch"));
    if (sched != "batch" && sched != "normal") {
      return Status::InvalidArgument("feed job: feeder_sched is \"batch\" or \"normal\", not \"" +
                                     sched + "\"");
    }
    job.yield_to_training = sched == "batch";
    for (const auto& t : j.at("targets")) {
      job.targets.push_back({t.at("executor_id").get<int>(), t.at("host").get<std::string>(),
                             t.at("feed_port").get<int>(), t.at("feed_index").get<int>(),
                             t.at("job_name").get<std::string>(), t.at("task_index").get<int>()});
    }
  } catch (const json::exception& e) {
    return Status::InvalidArgument(std::string("feed job: ") + e.what());
  }
  if (job.targets.empty()) return Status::InvalidArgument("feed job: no node to feed");
  return job;
}

Result<PartitionSession> OpenPartitionSession(const FeedJob& job, int64_t partition,
                                              bool inference) {
  const std::string choosing = "feeding partition " + std::to_string(partition) +
                               ": choosing its node";
  auto coordinator = ParseHostPort(job.coordinator);
  if (!coordinator.ok()) return coordinator.status().WithContext(choosing);
  PartitionSession out;
  out.partition = partition;
  bool other_host = false;
  if (job.modulo || job.partitions <= 0) {
    out.target = job.targets[static_cast<size_t>(partition) % job.targets.size()];
    const char* here = std::getenv("SPARK_LOCAL_IP");  // this host, where Spark says it
    other_host = here && *here && out.target.host != here;
  } else {
    auto assigned = AssignFeedTarget(*coordinator, job.token, job.feed_id, partition,
                                     job.partitions, job.generation,
                                     std::min(job.timeout, std::chrono::milliseconds(60000)));
    if (!assigned.ok()) return assigned.status().WithContext(choosing);
    bool found = false;
    for (const auto& t : job.targets) {
      if (t.executor_id == assigned->first) out.target = t, found = true;
    }
    if (!found) {
      return Status::Internal(choosing + ": the coordinator chose executor " +
                              std::to_string(assigned->first) + ", which is not fed");
    }
    // A node on another host is fed over TCP, even where the hosts share a kernel (hosts
    // simulated by loopback addresses), whose shared memory would be reachable.
    other_host = out.target.host != assigned->second;
  }
  FeedTarget where;
  where.cluster_id = job.cluster_id;
  where.executor_id = out.target.executor_id;
  where.address = {out.target.host, out.target.feed_port};
  where.prefer_local = !job.force_tcp && !other_host;
  auto session = FeedSession::Open(where, job.token, job.qname, job.feed_id, partition,
                                   inference, job.timeout);
  if (session.ok()) {
    out.session = std::move(*session);
    return out;
  }
  const StatusCode code = session.status().code();
  if (code != StatusCode::kUnavailable && code != StatusCode::kNotFound &&
      code != StatusCode::kAborted) {
    return out.WithNode(session.status());
  }
  const auto failure = NodeFailure(*coordinator, job.token, out.target.executor_id,
                                   std::chrono::milliseconds(10000));
  if (failure && failure->empty() && !inference) return out;  // it finished reading
  if (failure) {
    return out.WithNode(Status::Aborted(
        "the node is gone: " + (failure->empty() ? "its map_fun returned" : *failure)));
  }
  return out.WithNode(session.status());
}

std::string PartitionSession::Describe() const {
  return "feeding partition " + std::to_string(partition) + " to node " +
         std::to_string(target.executor_id) + " (" + target.job_name + ":" +
         std::to_string(target.task_index) + " on " + target.host + ")";
}

Status PartitionSession::PushArrow(feed::ArrowFeeder& feeder, const ArrowSchema& schema,
                                   const ArrowArray& batch, uint64_t* pushed) const {
  FeedSession& s = *session;
  return feeder.Feed(
      schema, batch, [&s](feed::MessageParts parts, uint64_t) { return s.Push(parts); },
      pushed);
}

Result<std::unique_ptr<ArrowPartitionFeed>> ArrowPartitionFeed::Open(const FeedJob& job,
                                                                     int64_t partition) {
  std::optional<SchedYield::Guard> yield;
  if (job.yield_to_training) yield.emplace(JvmFeedYield().Enter());
  ASSIGN_OR_RETURN(PartitionSession s, OpenPartitionSession(job, partition, false));
  return std::unique_ptr<ArrowPartitionFeed>(
      new ArrowPartitionFeed(std::move(s), std::move(yield)));
}

SchedYield& JvmFeedYield() {
  static SchedYield yield({"C1 CompilerThre", "C2 CompilerThre", "JIT Compilation"});
  return yield;
}

Result<uint64_t> ArrowPartitionFeed::Push(const ArrowSchema& schema, const ArrowArray& batch) {
  if (stopped_) return uint64_t{0};
  uint64_t pushed = 0;
  const Status st = s_.PushArrow(feeder_, schema, batch, &pushed);
  if (st.code() == StatusCode::kCancelled) {  // the consumer stopped reading on purpose
    stopped_ = true;
    return pushed;
  }
  if (!st.ok()) return s_.WithNode(st);
  return pushed;
}

Status ArrowPartitionFeed::Finish() {
  if (!s_.session) return Status::OK();
  const Status st = s_.session->Finish();
  if (st.code() == StatusCode::kCancelled) {  // over TCP, the agent may tell it only now
    stopped_ = true;
    return Status::OK();
  }
  return st.ok() ? st : s_.WithNode(st);
}

}  // namespace sparktf::node
