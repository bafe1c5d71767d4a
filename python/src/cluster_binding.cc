// sparktf._native cluster API: the coordinator (driver side) and a barrier
// call for node processes.
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "bindings.h"
#include "sparktf/cluster/coordinator.h"
#include "sparktf/cluster/status_table.h"
#include "sparktf/common/net.h"

namespace sparktf::python {
namespace {

using namespace sparktf::cluster;

class PyCoordinator {
 public:
  PyCoordinator(int num_nodes, const std::string& token, int num_ps,
                const std::string& master_node, bool eval_node, const std::string& bind_host,
                int port, double heartbeat_timeout, const std::string& node_log_dir,
                bool echo_node_output, double straggler_fraction, double straggler_after,
                const std::vector<std::string>& status_hosts, int status_port,
                const std::vector<std::string>& status_tokens,
                const std::map<std::string, std::pair<std::string, nb::bytes>>& status_assets) {
    CoordinatorOptions o;
    o.num_nodes = num_nodes;
    o.token = token;
    o.num_ps = num_ps;
    o.master_node = master_node;
    o.eval_node = eval_node;
    o.bind_host = bind_host;
    o.port = port;
    o.heartbeat_timeout = Ms(heartbeat_timeout);
    o.node_logs.dir = node_log_dir;
    o.node_logs.echo_fd = echo_node_output ? 2 : -1;
    o.straggler_fraction = straggler_fraction;
    o.straggler_after = Ms(straggler_after);
    if (!status_hosts.empty()) {
      StatusServerOptions s;
      s.hosts = status_hosts;
      s.port = status_port;
      s.tokens = status_tokens;
      for (const auto& [path, asset] : status_assets) {
        s.assets[path] = {asset.first, std::string(asset.second.c_str(), asset.second.size())};
      }
      o.status_server = std::move(s);
    }
    c_ = ValueOrThrow(Coordinator::Start(o));
  }
  int port() const { return c_->port(); }
  // True once reserved; False if `timeout` passed first (why: last_wait_error()).
  // Raises Aborted if the cluster was aborted.
  bool WaitReserved(double timeout) {
    return Wait([&] { return c_->WaitReserved(Ms(timeout)); });
  }
  // True when every node exited cleanly; False on timeout; raises Aborted with
  // the failed node's traceback.
  bool WaitFinished(double timeout) {
    return Wait([&] { return c_->WaitFinished(Ms(timeout)); });
  }
  std::string last_wait_error() const { return last_wait_error_; }
  void Abort(const std::string& reason) { c_->Abort(reason); }
  void SetEvaluatorGrace(double seconds) {
    c_->SetEvaluatorGrace(std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000)));
  }
  int Restart() { return c_->Restart(); }
  std::string ClusterJson() const { return c_->ClusterJson(); }
  std::string StatusJson() const { return c_->StatusJson(); }
  std::string HistoryJson() const { return c_->HistoryJson(); }
  int status_port() const { return c_->status_port(); }
  std::string NodeLogPath(const std::string& node) const { return c_->NodeLogPath(node); }
  void Shutdown() {
    nb::gil_scoped_release release;
    c_->Shutdown();
  }

 private:
  // Runs a blocking wait without the GIL; a timeout is `false`, not an error.
  template <typename Fn>
  bool Wait(Fn&& wait) {
    Status st;
    {
      nb::gil_scoped_release release;
      st = wait();
    }
    if (st.code() == StatusCode::kDeadlineExceeded) {
      last_wait_error_ = st.message();
      return false;
    }
    ThrowIfError(st);
    return true;
  }

  std::unique_ptr<Coordinator> c_;
  std::string last_wait_error_;
};

}  // namespace

void InitCluster(nb::module_& m) {
  nb::class_<PyCoordinator>(m, "Coordinator")
      .def(nb::init<int, const std::string&, int, const std::string&, bool, const std::string&,
                    int, double, const std::string&, bool, double, double,
                    const std::vector<std::string>&, int, const std::vector<std::string>&,
                    const std::map<std::string, std::pair<std::string, nb::bytes>>&>(),
           nb::arg("num_nodes"), nb::arg("token"), nb::arg("num_ps") = 0,
           nb::arg("master_node") = "", nb::arg("eval_node") = false,
           nb::arg("bind_host") = "0.0.0.0", nb::arg("port") = 0,
           nb::arg("heartbeat_timeout") = 10.0, nb::arg("node_log_dir") = "",
           nb::arg("echo_node_output") = false, nb::arg("straggler_fraction") = 0.5,
           nb::arg("straggler_after") = 30.0,
           nb::arg("status_hosts") = std::vector<std::string>{}, nb::arg("status_port") = 0,
           nb::arg("status_tokens") = std::vector<std::string>{},
           nb::arg("status_assets") = std::map<std::string, std::pair<std::string, nb::bytes>>{})
      .def_prop_ro("port", &PyCoordinator::port)
      .def_prop_ro("status_port", &PyCoordinator::status_port)
      .def("history_json", &PyCoordinator::HistoryJson)
      .def("wait_reserved", &PyCoordinator::WaitReserved, nb::arg("timeout"))
      .def("wait_finished", &PyCoordinator::WaitFinished, nb::arg("timeout"))
      .def("last_wait_error", &PyCoordinator::last_wait_error)
      .def("abort", &PyCoordinator::Abort, nb::arg("reason"))
      .def("set_evaluator_grace", &PyCoordinator::SetEvaluatorGrace, nb::arg("seconds"))
      .def("cluster_json", &PyCoordinator::ClusterJson)
      .def("status_json", &PyCoordinator::StatusJson)
      .def("node_log_path", &PyCoordinator::NodeLogPath, nb::arg("node"))
      .def("restart", &PyCoordinator::Restart)
      .def("shutdown", &PyCoordinator::Shutdown);

  m.def("format_status_table", [](const std::string& status_json) {
    return ValueOrThrow(FormatStatusTable(status_json));
  }, nb::arg("status_json"));

  m.def("barrier", [](const std::string& address, const std::string& token,
                      const std::string& name, int executor_id, int count, double timeout,
                      int generation) {
    Status st;
    {
      nb::gil_scoped_release release;
      st = [&]() -> Status {
        ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
        ASSIGN_OR_RETURN(Connection conn, Connection::Open(hp, token, Ms(timeout)));
        nlohmann::json req = {{"name", name}, {"executor_id", executor_id},
                              {"generation", generation}};
        if (count > 0) req["count"] = count;
        return conn.Call(MessageType::kBarrier, req.dump(), MessageType::kBarrierDone, Ms(timeout))
            .status()
            .WithContext("barrier '" + name + "'");
      }();
    }
    ThrowIfError(st);
  }, nb::arg("address"), nb::arg("token"), nb::arg("name"), nb::arg("executor_id"),
     nb::arg("count") = 0, nb::arg("timeout") = 600.0, nb::arg("generation") = 0);

  // Keeps the GIL (the query takes microseconds): a daemon thread polls this, and one that
  // released the GIL here while the interpreter exits would end in std::terminate when
  // PyEval_RestoreThread ends the thread from inside the GIL guard's destructor.
  m.def("tcp_port_listening", [](int port) { return ValueOrThrow(TcpPortListening(port)); },
     nb::arg("port"),
     "Whether a TCP socket of this machine listens on `port` (sock_diag; microseconds).");

  m.def("get_status", [](const std::string& address, const std::string& token, double timeout) {
    Result<std::string> r = [&]() -> Result<std::string> {
      nb::gil_scoped_release release;
      ASSIGN_OR_RETURN(HostPort hp, ParseHostPort(address));
      ASSIGN_OR_RETURN(Connection conn, Connection::Open(hp, token, Ms(timeout)));
      ASSIGN_OR_RETURN(Frame f, conn.Call(MessageType::kGetStatus, "{}", MessageType::kStatus,
                                          Ms(timeout)));
      return f.payload;
    }();
    return ValueOrThrow(std::move(r));
  }, nb::arg("address"), nb::arg("token"), nb::arg("timeout") = 10.0);
}

}  // namespace sparktf::python
