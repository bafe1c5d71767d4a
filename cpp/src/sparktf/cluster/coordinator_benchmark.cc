// The control plane at a scale this machine cannot host as real executors: a coordinator
// and N simulated nodes, in-process fakes that speak the real protocol over loopback TCP
// (one connection each, as agents hold). The nodes run in a forked child, so that this
// process's CPU time is the coordinator's.
//
//   coordinator_benchmark [--nodes N] [--steady-seconds S]
//
// Prints one JSON line: the time to form the cluster (first connect to the last node's
// CLUSTER_SPEC), the coordinator's CPU at steady state (every node sending a heartbeat and
// a FEED_SYNC each second) as a fraction of one core, and the time from one node's
// connection dropping to every other node holding its ABORT.
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "sparktf/cluster/coordinator.h"

using namespace sparktf;
using namespace sparktf::cluster;
using Clock = std::chrono::steady_clock;

namespace {

const char* kToken = "benchmark-token";

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct FakeNode {
  UniqueFd fd;
  FrameDecoder decoder{1 << 20};
  bool formed = false;
  bool aborted = false;
};

// Reads what arrived on every node, for up to `timeout_ms`; counts frames of `type` into
// the per-node flag chosen by `mark`. Returns false on a socket error.
template <typename Mark>
bool Pump(std::vector<FakeNode>& nodes, int timeout_ms, MessageType type, Mark mark) {
  std::vector<pollfd> fds;
  for (auto& n : nodes) fds.push_back({n.fd.valid() ? n.fd.get() : -1, POLLIN, 0});
  if (::poll(fds.data(), fds.size(), timeout_ms) < 0) return false;
  char buf[65536];
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
    const ssize_t got = ::recv(nodes[i].fd.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (got <= 0) continue;
    nodes[i].decoder.Feed({buf, static_cast<size_t>(got)});
    Frame f;
    bool have = false;
    while (nodes[i].decoder.Next(&f, &have).ok() && have) {
      if (f.type == type) mark(nodes[i]);
    }
  }
  return true;
}

void Send(FakeNode& n, MessageType type, const std::string& payload) {
  std::string bytes;
  AppendFrame(type, payload, &bytes);
  if (!WriteAll(n.fd.get(), bytes).ok()) std::_Exit(3);
}

// The child: N nodes form the cluster, run at steady state, then one drops. Writes
// "B" and "E" around the steady state to `marks` and its figures as JSON to `out`.
int RunNodes(int port, int n, int steady_seconds, int marks) {
  std::vector<FakeNode> nodes(n);
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    auto fd = ConnectTcp({"127.0.0.1", port}, std::chrono::milliseconds(5000));
    if (!fd.ok()) {
      std::fprintf(stderr, "node %d: %s\n", i, fd.status().ToString().c_str());
      return 2;
    }
    nodes[i].fd = std::move(*fd);
    std::string bytes;
    AppendFrame(MessageType::kHello, kToken, &bytes);
    AppendFrame(MessageType::kRegister,
                "{\"executor_id\": " + std::to_string(i) +
                    ", \"host\": \"127.0.0.1\", \"port\": " + std::to_string(20000 + i) + "}",
                &bytes);
    AppendFrame(MessageType::kAwaitCluster, "{}", &bytes);
    if (!WriteAll(nodes[i].fd.get(), bytes).ok()) return 3;
  }
  const double connected = Seconds(Clock::now() - t0);
  int formed = 0;
  while (formed < n) {
    if (Seconds(Clock::now() - t0) > 60) return 4;
    Pump(nodes, 100, MessageType::kClusterSpec, [&](FakeNode& f) {
      if (!f.formed) ++formed;
      f.formed = true;
    });
  }
  const double formation = Seconds(Clock::now() - t0);

  (void)!::write(marks, "B", 1);
  const auto steady_start = Clock::now();
  uint64_t delivered = 0;
  for (int s = 0; s < steady_seconds; ++s) {
    const auto second = steady_start + std::chrono::seconds(s);
    ++delivered;
    for (int i = 0; i < n; ++i) {
      Send(nodes[i], MessageType::kHeartbeat, "{\"state\": \"running\"}");
      Send(nodes[i], MessageType::kFeedSync,
           "{\"executor_id\": " + std::to_string(i) + ", \"qname\": \"input\", \"delivered\": " +
               std::to_string(delivered) + ", \"closed\": false}");
    }
    while (Clock::now() < second + std::chrono::seconds(1)) {
      Pump(nodes, 50, MessageType::kFeedState, [](FakeNode&) {});
    }
  }
  (void)!::write(marks, "E", 1);

  const auto dropped = Clock::now();
  nodes[0].fd.Reset();  // no exit report: the node is lost
  int aborted = 0;
  while (aborted < n - 1) {
    if (Seconds(Clock::now() - dropped) > 30) return 5;
    Pump(nodes, 100, MessageType::kAbort, [&](FakeNode& f) {
      if (!f.aborted) ++aborted;
      f.aborted = true;
    });
  }
  const double death = Seconds(Clock::now() - dropped);
  char figures[128];
  const int len = std::snprintf(figures, sizeof(figures),
                                "\"connected_s\": %.4f, \"formation_s\": %.4f, "
                                "\"death_broadcast_s\": %.4f",
                                connected, formation, death);
  (void)!::write(marks, figures, static_cast<size_t>(len));
  return 0;
}

double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  int n = 1000, steady_seconds = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--nodes")) n = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--steady-seconds")) steady_seconds = std::atoi(argv[i + 1]);
  }
  rlimit lim{};
  ::getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &lim);
  if (lim.rlim_cur < static_cast<rlim_t>(n) + 64) {
    std::fprintf(stderr, "open-file limit %llu is too low for %d nodes\n",
                 static_cast<unsigned long long>(lim.rlim_cur), n);
    return 2;
  }

  CoordinatorOptions o;
  o.bind_host = "127.0.0.1";
  o.token = kToken;
  o.num_nodes = n;
  auto coord = Coordinator::Start(o);
  if (!coord.ok()) {
    std::fprintf(stderr, "%s\n", coord.status().ToString().c_str());
    return 2;
  }
  int marks[2];
  if (::pipe(marks) != 0) return 2;
  const pid_t child = ::fork();
  if (child == 0) {
    ::close(marks[0]);
    std::_Exit(RunNodes((*coord)->port(), n, steady_seconds, marks[1]));
  }
  ::close(marks[1]);
  char c = 0;
  double cpu_begin = 0, cpu_end = 0;
  Clock::time_point wall_begin, wall_end;
  std::string figures;  // the child's, after "E"
  while (::read(marks[0], &c, 1) == 1) {
    if (c == 'B' && figures.empty()) {
      cpu_begin = CpuSeconds();
      wall_begin = Clock::now();
    } else if (c == 'E' && figures.empty()) {
      cpu_end = CpuSeconds();
      wall_end = Clock::now();
      figures.push_back(' ');
    } else if (!figures.empty()) {
      figures.push_back(c);
    }
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  (*coord)->Shutdown();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "the simulated nodes failed (status %d)\n", status);
    return 1;
  }
  std::printf("{\"nodes\": %d,%s, \"steady_seconds\": %d, \"coordinator_cpu_fraction\": %.4f}\n",
              n, figures.c_str(), steady_seconds,
              (cpu_end - cpu_begin) / Seconds(wall_end - wall_begin));
  return 0;
}
