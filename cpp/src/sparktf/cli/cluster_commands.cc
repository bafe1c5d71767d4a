// sparktf agent | launch: the cluster runtime from the command line.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "sparktf/cli/commands.h"
#include "sparktf/cluster/coordinator.h"
#include "sparktf/node/agent.h"

namespace sparktf::cli {
namespace {

using json = nlohmann::json;
using namespace std::chrono_literals;

[[noreturn]] void Fail(const Status& st, int code = 1) {
  std::cerr << "sparktf: " << st.ToString() << "\n";
  throw CLI::RuntimeError(code);
}

template <typename T>
T OrFail(Result<T> r, int code = 1) {
  if (!r.ok()) Fail(r.status(), code);
  return std::move(r).ValueOrDie();
}

std::string RandomToken() {
  unsigned char bytes[16];
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  urandom.read(reinterpret_cast<char*>(bytes), sizeof(bytes));
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : bytes) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

// The token from --token-file, else $SPARKTF_TOKEN; empty if neither.
std::string LoadToken(const std::string& token_file) {
  if (!token_file.empty() && std::filesystem::exists(token_file)) {
    std::ifstream in(token_file);
    std::string t;
    std::getline(in, t);
    return t;
  }
  const char* env = std::getenv("SPARKTF_TOKEN");
  return env ? env : "";
}

struct AgentArgs {
  std::string coordinator;
  std::string token_file;
  node::AgentOptions options;
  double reservation_timeout = 600;
  double feed_timeout = 600;
  double progress_timeout = 0;
  std::string gpus;
};

struct LaunchArgs {
  int nodes = 0;
  int ps = 0;
  bool chief = false;
  bool evaluator = false;
  std::string coordinator;
  bool host_coordinator = false;
  int local = -1;
  int first_executor = 0;
  std::string token_file;
  double reservation_timeout = 600;
  std::string tensorboard_logdir;
  std::vector<std::string> command;
};

int RunLaunch(const LaunchArgs& a) {
  const bool hosting = a.coordinator.empty() || a.host_coordinator;
  HostPort addr{"127.0.0.1", 0};
  if (!a.coordinator.empty()) addr = OrFail(ParseHostPort(a.coordinator), 2);
  std::string token = LoadToken(a.token_file);
  if (token.empty()) {
    if (!hosting) Fail(Status::InvalidArgument("joining a coordinator needs its token: "
                                               "--token-file or $SPARKTF_TOKEN"), 2);
    token = RandomToken();
    if (!a.token_file.empty()) {
      std::ofstream out(a.token_file);
      out << token << "\n";
      ::chmod(a.token_file.c_str(), 0600);
    }
  }
  const int local = a.local >= 0 ? a.local : (hosting && a.coordinator.empty() ? a.nodes : 0);
  std::unique_ptr<cluster::Coordinator> coord;
  if (hosting) {
    cluster::CoordinatorOptions co;
    co.bind_host = a.coordinator.empty() ? "127.0.0.1" : addr.host;
    co.port = addr.port;
    co.token = token;
    co.num_nodes = a.nodes;
    co.num_ps = a.ps;
    co.master_node = a.chief ? "chief" : "";
    co.eval_node = a.evaluator;
    coord = OrFail(cluster::Coordinator::Start(co), 2);
    addr.port = coord->port();
    std::cerr << "sparktf launch: coordinator on " << addr.ToString() << " for " << a.nodes
              << " nodes\n";
  }
  char tmpl[] = "/tmp/sparktf-launch-XXXXXX";
  const std::string tmpdir = ::mkdtemp(tmpl) ? tmpl : "/tmp";
  std::vector<pid_t> agents;
  for (int i = 0; i < local; ++i) {
    const int id = a.first_executor + i;
    std::vector<std::string> argv = {"/proc/self/exe", "agent", "--coordinator", addr.ToString(),
                                     "--executor-id", std::to_string(id), "--error-file",
                                     tmpdir + "/error-" + std::to_string(id),
                                     "--reservation-timeout",
                                     std::to_string(a.reservation_timeout)};
    if (!a.tensorboard_logdir.empty()) {
      argv.insert(argv.end(), {"--tensorboard-logdir", a.tensorboard_logdir});
    }
    argv.push_back("--");
    argv.insert(argv.end(), a.command.begin(), a.command.end());
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setenv("SPARKTF_TOKEN", token.c_str(), 1);
      std::vector<char*> cargv;
      for (auto& s : argv) cargv.push_back(s.data());
      cargv.push_back(nullptr);
      ::execv("/proc/self/exe", cargv.data());
      ::_exit(127);
    }
    agents.push_back(pid);
  }
  int result = 0;
  if (coord) {
    Status st = coord->WaitReserved(std::chrono::milliseconds(
        static_cast<int64_t>(a.reservation_timeout * 1000)));
    if (st.ok()) {
      std::cerr << "sparktf launch: cluster " << coord->ClusterJson() << "\n";
      st = coord->WaitFinished(std::chrono::hours(24 * 365));
    } else {
      coord->Abort(st.message());
    }
    if (!st.ok()) {
      std::cerr << "sparktf launch: FAILED: " << st.message() << "\n";
      result = 1;
    }
  }
  for (pid_t pid : agents) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (code != 0 && result == 0) result = code;
  }
  if (coord) coord->Shutdown();
  std::filesystem::remove_all(tmpdir);
  return result;
}

}  // namespace

void AddClusterCommands(CLI::App* app) {
  auto aa = std::make_shared<AgentArgs>();
  auto* agent = app->add_subcommand(
      "agent", "Run one node: register with a coordinator, run and supervise a command");
  agent->add_option("--coordinator", aa->coordinator, "Coordinator HOST:PORT")->required();
  agent->add_option("--executor-id", aa->options.executor_id, "This node's id (0..N-1)")
      ->required();
  agent->add_option("--token-file", aa->token_file, "File holding the token (else $SPARKTF_TOKEN)");
  agent->add_option("--gpus", aa->gpus, "Comma-separated GPU ids for CUDA_VISIBLE_DEVICES");
  agent->add_option("--error-file", aa->options.error_file,
                    "Where the command writes a traceback on failure");
  agent->add_option("--tensorboard-logdir", aa->options.tensorboard_logdir,
                    "Start TensorBoard on this log dir if this node is the chief");
  agent->add_option("--python", aa->options.python, "Python for TensorBoard")
      ->capture_default_str();
  agent->add_option("--reservation-timeout", aa->reservation_timeout,
                    "Seconds to wait for the other nodes")
      ->capture_default_str();
  agent->add_option("--feed-cluster-id", aa->options.feed_cluster_id,
                    "Serve feeds (InputMode.SPARK) for this cluster id");
  agent->add_option("--feed-timeout", aa->feed_timeout, "Seconds a feed may wait on anything")
      ->capture_default_str();
  agent->add_option("--ready-fd", aa->options.ready_fd,
                    "Write 'ready' to this descriptor once the command runs, then close it");
  agent->add_option("--watch-pid", aa->options.watch_pid,
                    "Stop when this process (the Spark executor) ends, instead of the parent");
  agent->add_option("--progress-timeout", aa->progress_timeout,
                    "Seconds the TF process's main thread may stay put before it fails "
                    "(0: never)")
      ->capture_default_str();
  agent->add_option("--generation", aa->options.generation,
                    "The cluster's generation (restarts so far) this node belongs to")
      ->capture_default_str();
  agent->add_option("--local-ip", aa->options.local_ip,
                    "Connect to the coordinator from this address (this host's Spark "
                    "address, SPARK_LOCAL_IP): it becomes the node's address");
  agent->add_option("--spark-executor-id", aa->options.spark_executor,
                    "Spark's id of the executor this node runs in (for messages)");
  agent->add_flag("--stream-output", aa->options.stream_output,
                  "Also send what the command writes to the coordinator, in lines, for the "
                  "driver's log");
  agent->add_option("command", aa->options.command, "The command (after --)")->required();
  agent->callback([aa] {
    aa->options.coordinator = OrFail(ParseHostPort(aa->coordinator), 2);
    aa->options.token = LoadToken(aa->token_file);
    if (aa->options.token.empty()) {
      Fail(Status::InvalidArgument("no token: --token-file or $SPARKTF_TOKEN"), 2);
    }
    std::stringstream gs(aa->gpus);
    for (std::string g; std::getline(gs, g, ',');) {
      if (!g.empty()) aa->options.gpus.push_back(g);
    }
    aa->options.reservation_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(aa->reservation_timeout * 1000));
    aa->options.feed_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(aa->feed_timeout * 1000));
    aa->options.progress_timeout =
        std::chrono::milliseconds(static_cast<int64_t>(aa->progress_timeout * 1000));
    if (aa->options.watch_pid > 0) aa->options.die_with_parent = false;
    auto code = node::RunAgent(aa->options);
    if (!code.ok()) {
      std::cerr << "sparktf agent " << aa->options.executor_id << ": "
                << code.status().ToString() << "\n";
      throw CLI::RuntimeError(3);
    }
    if (*code != 0) throw CLI::RuntimeError(*code);
  });

  auto la = std::make_shared<LaunchArgs>();
  auto* launch = app->add_subcommand(
      "launch", "Run a TensorFlow cluster without Spark: N supervised processes with TF_CONFIG");
  launch->add_option("-n,--nodes", la->nodes, "Number of nodes in the cluster")->required()
      ->check(CLI::Range(1, 100000));
  launch->add_option("--ps", la->ps, "Parameter servers among them")->capture_default_str();
  launch->add_flag("--chief", la->chief, "Make one node the chief");
  launch->add_flag("--evaluator", la->evaluator, "Make one node the evaluator");
  launch->add_option("--coordinator", la->coordinator,
                     "HOST:PORT of a coordinator to join (or to host, with --host-coordinator)");
  launch->add_flag("--host-coordinator", la->host_coordinator,
                   "Host the coordinator at --coordinator's address (multi-machine)");
  launch->add_option("--local", la->local,
                     "Nodes to run on this machine (default: all when hosting alone)");
  launch->add_option("--first-executor", la->first_executor,
                     "Id of the first local node (multi-machine)")
      ->capture_default_str();
  launch->add_option("--token-file", la->token_file,
                     "Token file (created when hosting, read when joining)");
  launch->add_option("--reservation-timeout", la->reservation_timeout,
                     "Seconds to wait for every node")
      ->capture_default_str();
  launch->add_option("--tensorboard-logdir", la->tensorboard_logdir,
                     "Run TensorBoard on the chief for this log dir");
  launch->add_option("command", la->command, "The command to run on every node (after --)")
      ->required();
  launch->callback([la] {
    int code = RunLaunch(*la);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace sparktf::cli
