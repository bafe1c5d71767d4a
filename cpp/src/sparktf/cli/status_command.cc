// sparktf status URL [--watch]: a running cluster's status endpoint as a table.
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <thread>

#include "sparktf/cli/commands.h"
#include "sparktf/cluster/status_client.h"
#include "sparktf/cluster/status_table.h"

namespace sparktf::cli {
namespace {

using namespace std::chrono_literals;

struct StatusArgs {
  std::string url;
  std::string token;
  double watch = 0;  // seconds between refreshes; 0: once
  bool json = false;
  double timeout = 10;
};

volatile std::sig_atomic_t interrupted = 0;

int RunStatus(const StatusArgs& a) {
  const auto timeout = std::chrono::milliseconds(static_cast<int64_t>(a.timeout * 1000));
  const bool tty = ::isatty(STDOUT_FILENO);
  std::signal(SIGINT, [](int) { interrupted = 1; });
  for (int round = 0;; ++round) {
    auto body = cluster::FetchStatusPath(a.url, a.token, "/api/status", timeout);
    if (!body.ok()) {
      std::cerr << "sparktf: " << body.status().ToString() << "\n";
      return body.status().code() == StatusCode::kUnauthenticated ? 3 : 1;
    }
    std::string out = *body + "\n";
    if (!a.json) {
      auto table = cluster::FormatStatusTable(*body);
      if (!table.ok()) {
        std::cerr << "sparktf: " << a.url << ": " << table.status().ToString() << "\n";
        return 1;
      }
      out = *table;
    }
    if (a.watch > 0 && tty) std::cout << "\x1b[H\x1b[2J";  // home, clear
    else if (a.watch > 0 && round > 0) std::cout << "\n";
    std::cout << out << std::flush;
    if (a.watch <= 0) return 0;
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::milliseconds(static_cast<int64_t>(a.watch * 1000));
    while (std::chrono::steady_clock::now() < until) {
      if (interrupted) return 0;
      std::this_thread::sleep_for(50ms);
    }
  }
}

}  // namespace

void AddStatusCommand(CLI::App* app) {
  auto a = std::make_shared<StatusArgs>();
  auto* status = app->add_subcommand(
      "status", "A running cluster's status (its status endpoint, the URL the driver printed) "
                "as a table, one row a node");
  status->add_option("url", a->url, "http://host:port/?token=... (as printed by the driver)")
      ->required();
  status->add_option("--token", a->token,
                     "The status token, if the URL has none (default: $SPARKTF_STATUS_TOKEN)")
      ->envname("SPARKTF_STATUS_TOKEN");
  status->add_option("-w,--watch", a->watch, "Refresh every SECONDS until interrupted")
      ->expected(0, 1)
      ->default_str("2");
  status->add_flag("--json", a->json, "Print the status JSON instead of the table");
  status->add_option("--timeout", a->timeout, "Seconds to wait for an answer")
      ->capture_default_str();
  status->callback([a, status] {
    if (status->count("--watch") && a->watch <= 0) a->watch = 2;
    const int code = RunStatus(*a);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace sparktf::cli
