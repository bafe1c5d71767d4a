#include "sparktf/node/agent.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "sparktf/common/json_internal.h"
#include "sparktf/feed/ring.h"
#include "sparktf/node/agent_frames.h"
#include "sparktf/node/output_lines.h"
#include "sparktf/node/feed_service.h"

extern char** environ;

namespace sparktf::node {
namespace {

using cluster::Connection;
using cluster::Frame;
using cluster::MessageType;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

// At most one NODE_METRICS per node per this (its TF process reports every 0.5 s at most).
constexpr auto kMetricsInterval = 1s;

// Keeps the last N lines written through it.
class TailBuffer {
 public:
  explicit TailBuffer(size_t max_lines) : max_lines_(max_lines) {}
  void Append(std::string_view s) {
    for (char c : s) {
      if (c == '\n') {
        lines_.push_back(std::move(partial_));
        partial_.clear();
        if (lines_.size() > max_lines_) lines_.pop_front();
      } else if (partial_.size() < 4096) {
        partial_ += c;
      }
    }
  }
  std::string str() const {
    std::string out;
    for (const auto& l : lines_) out += l + "\n";
    return out + partial_;
  }

 private:
  size_t max_lines_;
  std::deque<std::string> lines_;
  std::string partial_;
};

// Forks and execs argv in a new process group; stdout and stderr go to stdout_fd and
// stderr_fd (if >= 0); keep_fds survive exec. The child gets the original signal mask.
Result<pid_t> Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                    int stdout_fd, int stderr_fd, const std::vector<int>& keep_fds,
                    const sigset_t& mask) {
  std::vector<char*> cargv, cenv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) return Status::FromErrno("fork", errno);
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(SIGPIPE, SIG_DFL);  // the agent ignores it; an exec'd program gets the default
    ::sigprocmask(SIG_SETMASK, &mask, nullptr);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the agent
    if (stdout_fd >= 0) ::dup2(stdout_fd, 1);
    if (stderr_fd >= 0) ::dup2(stderr_fd, 2);
    for (int fd : keep_fds) ::fcntl(fd, F_SETFD, 0);
    ::execvpe(cargv[0], cargv.data(), cenv.data());
    const std::string msg = "sparktf agent: cannot run " + argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

// Terminates a process group: SIGTERM, then SIGKILL after `grace`. Reaps the
// leader and returns its wait status.
int KillGroup(pid_t pid, std::chrono::milliseconds grace) {
  int status = 0;
  ::kill(-pid, SIGTERM);
  const auto deadline = Clock::now() + grace;
  while (Clock::now() < deadline) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      ::kill(-pid, SIGKILL);  // stragglers in the group
      return status;
    }
    std::this_thread::sleep_for(20ms);
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return status;
}

std::string ReadSmallFile(const std::string& path, size_t limit = 64 * 1024) {
  if (path.empty()) return "";
  std::ifstream in(path, std::ios::binary);
  std::string out(limit, '\0');
  in.read(out.data(), static_cast<std::streamsize>(limit));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

Result<Connection> ConnectWithRetry(const AgentOptions& o) {
  const auto deadline = Clock::now() + o.connect_timeout;
  Status last;
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    auto conn = Connection::Open(o.coordinator, o.token,
                                 std::min<std::chrono::milliseconds>(left, 5s), o.local_ip);
    if (conn.ok()) {
      RETURN_NOT_OK(SetTcpUserTimeout(conn->fd(), o.coordinator_timeout));
      return conn;
    }
    last = conn.status();
    if (last.code() == StatusCode::kUnauthenticated) return last;
    std::this_thread::sleep_for(200ms);
  }
  return last.WithContext("register with coordinator " + o.coordinator.ToString() + " (gave up after " +
                          std::to_string(o.connect_timeout.count() / 1000) + " s)");
}

}  // namespace

Result<int> RunAgent(const AgentOptions& o) {
  if (o.command.empty()) return Status::InvalidArgument("no command to run");
  // Our stderr is often a pipe to the executor JVM, which may be gone by the time we say
  // so: a write there must fail, not kill us before we clean up.
  ::signal(SIGPIPE, SIG_IGN);
  if (o.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() == 1) return Status::Cancelled("parent process already gone");
  }
  sigset_t mask, orig;
  sigemptyset(&mask);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&mask, s);
  ::sigprocmask(SIG_BLOCK, &mask, &orig);
  UniqueFd sigfd(::signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!sigfd.valid()) return Status::FromErrno("signalfd", errno);

  UniqueFd watch_fd;
  if (o.watch_pid > 0) {
    watch_fd = UniqueFd(static_cast<int>(::syscall(SYS_pidfd_open, o.watch_pid, 0)));
    if (!watch_fd.valid()) return Status::FromErrno("watch pid " + std::to_string(o.watch_pid), errno);
  }
  std::unique_ptr<FeedServer> feeds;
  std::string ring_prefix;
  if (!o.feed_cluster_id.empty()) {
    ASSIGN_OR_RETURN(ring_prefix, FeedRingName(o.feed_cluster_id, o.executor_id, "x"));
    ring_prefix.pop_back();
    // Its cluster's rings of any generation whose consumer is dead: an agent killed with
    // its TF process could not remove them, and the next generation's names differ.
    feed::SweepStaleRings(FeedRingFamilyPrefix(o.feed_cluster_id));
    ASSIGN_OR_RETURN(feeds, FeedServer::Start({o.feed_cluster_id, o.executor_id, o.token,
                                               "0.0.0.0", o.feed_timeout}));
  }
  int port = 0;
  ASSIGN_OR_RETURN(UniqueFd port_fd, ReservePort(&port));
  ASSIGN_OR_RETURN(Connection conn, ConnectWithRetry(o));
  const std::string host = LocalAddress(conn.fd());
  json gpus = o.gpus;
  json reg = {{"executor_id", o.executor_id}, {"host", host}, {"port", port},
              {"pid", ::getpid()}, {"gpus", gpus}, {"feed_port", feeds ? feeds->port() : 0},
              {"generation", o.generation}};
  if (!o.spark_executor.empty()) reg["spark_executor"] = o.spark_executor;
  if (const char* container = std::getenv("CONTAINER_ID"); container && *container) {
    reg["container"] = container;
  }
  RETURN_NOT_OK(conn.Call(MessageType::kRegister, reg.dump(), MessageType::kRegistered, 30s).status());
  RETURN_NOT_OK(conn.Send(MessageType::kAwaitCluster, "{}"));

  // Wait for the cluster spec, heartbeating so the coordinator knows we live.
  json spec;
  {
    const auto deadline = Clock::now() + o.reservation_timeout;
    auto next_beat = Clock::now() + o.heartbeat_interval;
    Frame f;
    while (spec.is_null()) {
      ASSIGN_OR_RETURN(bool have, conn.NextBuffered(&f));
      if (have) {
        ASSIGN_OR_RETURN(CoordinatorRequest r, ReadCoordinatorFrame(f));
        if (r.kind == CoordinatorRequest::Kind::kClusterSpec) {
          spec = std::move(r.spec);
        } else if (r.kind == CoordinatorRequest::Kind::kAbort) {
          return Status::Aborted("cluster aborted before it started: " + r.reason);
        }
        continue;
      }
      const auto now = Clock::now();
      if (now >= deadline) {
        return Status::DeadlineExceeded("no cluster spec from " + o.coordinator.ToString() + " within " +
                                        std::to_string(o.reservation_timeout.count() / 1000) +
                                        " s (other executors did not register)");
      }
      if (now >= next_beat) {
        RETURN_NOT_OK(conn.Send(MessageType::kHeartbeat, R"({"state":"waiting"})"));
        next_beat = now + o.heartbeat_interval;
      }
      pollfd fds[2] = {{conn.fd(), POLLIN, 0}, {sigfd.get(), POLLIN, 0}};
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::min(deadline, next_beat) - Clock::now());
      ::poll(fds, 2, static_cast<int>(std::max<int64_t>(wait.count(), 0)));
      if (fds[1].revents & POLLIN) return Status::Cancelled("agent terminated before the cluster formed");
      if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) RETURN_NOT_OK(conn.ReadAvailable());
    }
  }

  // Environment of the TF process.
  std::vector<std::string> env;
  std::map<std::string, std::string> extra = o.env;
  for (auto& [k, v] : SpecEnvironment(spec)) extra[k] = std::move(v);
  extra["SPARKTF_COORDINATOR"] = o.coordinator.ToString();
  extra["SPARKTF_TOKEN"] = o.token;
  extra["SPARKTF_EXECUTOR_ID"] = std::to_string(o.executor_id);
  extra["SPARKTF_PORT"] = std::to_string(port);
  extra["SPARKTF_PORT_FD"] = std::to_string(port_fd.get());
  // The TF process writes lines here: "progress" when its main thread moved (at most once
  // a second), "done" once map_fun returned and its results are reported.
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd status_read(status_pipe[0]), status_write(status_pipe[1]);
  extra["SPARKTF_STATUS_FD"] = std::to_string(status_write.get());
  extra["SPARKTF_HOST"] = host;
  if (!o.error_file.empty()) extra["SPARKTF_ERROR_FILE"] = o.error_file;
  if (feeds) extra["SPARKTF_FEED_CLUSTER_ID"] = o.feed_cluster_id;
  if (!o.gpus.empty()) {
    std::string cvd;
    for (const auto& g : o.gpus) cvd += (cvd.empty() ? "" : ",") + g;
    extra["CUDA_VISIBLE_DEVICES"] = cvd;
  }
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    if (!extra.count(kv.substr(0, kv.find('=')))) env.push_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);

  // The TF process writes to pipes that this agent forwards to its own stdout and stderr
  // (whose write errors it ignores): the agent's may be pipes to a Python worker that
  // ends (SPARK mode), and a print must not fail the TF process with a broken pipe.
  int err_pipe[2], out_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd err_read(err_pipe[0]), err_write(err_pipe[1]);
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return Status::FromErrno("pipe", errno);
  UniqueFd out_read(out_pipe[0]), out_write(out_pipe[1]);
  ASSIGN_OR_RETURN(pid_t child, Spawn(o.command, env, out_write.get(), err_write.get(),
                                      {port_fd.get(), status_write.get()}, orig));
  err_write.Reset();
  out_write.Reset();
  status_write.Reset();
  port_fd.Reset();  // the TF process holds the reservation now

  pid_t tensorboard = -1;
  std::string tb_url;
  if (!o.tensorboard_logdir.empty() && IsTensorBoardNode(spec)) {
    int tb_port = 0;
    auto reserved = ReservePort(&tb_port);
    if (reserved.ok()) {
      reserved->Reset();  // TensorBoard binds without SO_REUSEPORT
      auto tb = Spawn({o.python, "-m", "sparktf.tensorboard", "--logdir", o.tensorboard_logdir,
                       "--port", std::to_string(tb_port), "--bind_all"},
                      env, -1, -1, {}, orig);
      if (tb.ok()) {
        tensorboard = *tb;
        tb_url = "http://" + host + ":" + std::to_string(tb_port);
      }
    }
  }
  if (o.ready_fd >= 0) {
    (void)!::write(o.ready_fd, "ready\n", 6);
    ::close(o.ready_fd);
  }
  json running = {{"state", "running"}, {"pid", child}, {"tensorboard", tb_url}};
  (void)conn.Send(MessageType::kHeartbeat, running.dump());

  TailBuffer tail(o.stderr_tail_lines);
  OutputLines output;
  auto next_output = Clock::time_point::max();  // when held output is sent
  // The TF process's last training report ("metrics {json}" on the status pipe), sent as
  // NODE_METRICS at most once per kMetricsInterval: the latest wins.
  std::string metrics;
  auto next_metrics = Clock::now();
  int wait_status = 0;
  bool exited = false, stopped = false, coordinator_gone = false;
  std::string stop_reason;
  auto next_beat = Clock::now() + o.heartbeat_interval;
  auto exit_deadline = Clock::time_point::max();  // set once map_fun returned
  auto last_progress = Clock::now();
  const bool watch_progress = o.progress_timeout.count() > 0;
  std::string status_lines;
  // Forwards what the TF process wrote to `from` to this agent's fd `to` (and keeps the
  // last stderr lines), until nothing arrives for timeout_ms or the pipe closes.
  auto drain = [&](UniqueFd& from, int to, OutputLines::Stream stream, TailBuffer* keep,
                   int timeout_ms) {
    char buf[8192];
    while (from.valid()) {
      pollfd p{from.get(), POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return;
      ssize_t n = ::read(from.get(), buf, sizeof(buf));
      if (n <= 0) {
        from.Reset();
        return;
      }
      (void)!::write(to, buf, static_cast<size_t>(n));
      if (keep) keep->Append({buf, static_cast<size_t>(n)});
      if (o.stream_output) output.Append(stream, {buf, static_cast<size_t>(n)});
    }
  };
  // Sends the held output lines (a failed send is the coordinator gone: the loop sees it).
  auto send_output = [&] {
    next_output = Clock::time_point::max();
    if (output.empty() || coordinator_gone) return;
    (void)conn.Send(MessageType::kNodeOutput, output.TakePayload(o.generation));
  };
  auto send_metrics = [&] {
    json m = json::parse(metrics, nullptr, false);
    metrics.clear();
    next_metrics = Clock::now() + kMetricsInterval;
    if (!m.is_object() || coordinator_gone) return;
    m["generation"] = o.generation;
    (void)conn.Send(MessageType::kNodeMetrics,
                    m.dump(-1, ' ', false, json::error_handler_t::replace));
  };
  auto drain_output = [&](int timeout_ms) {
    drain(out_read, 1, OutputLines::kStdout, nullptr, timeout_ms);
    drain(err_read, 2, OutputLines::kStderr, &tail, timeout_ms);
    if (output.pending_bytes() >= 65536) {
      send_output();
    } else if (!output.empty() && next_output == Clock::time_point::max()) {
      next_output = Clock::now() + o.output_interval;
    }
  };
  // Ends the TF process: SIGTERM, then SIGKILL after `grace` (the full kill grace for a
  // clean stop; a short one when the cluster is going down anyway, since TensorFlow
  // catches SIGTERM and would spend the grace dumping stacks).
  auto stop_child = [&](const std::string& why, std::chrono::milliseconds grace) {
    if (exited) return;
    stopped = true;
    stop_reason = why;
    wait_status = KillGroup(child, grace);
    exited = true;
  };
  while (!exited) {
    // A closed pipe polls as fd -1, which poll() skips.
    pollfd fds[6] = {{conn.fd(), POLLIN, 0}, {sigfd.get(), POLLIN, 0}, {watch_fd.get(), POLLIN, 0},
                     {err_read.valid() ? err_read.get() : -1, POLLIN, 0},
                     {out_read.valid() ? out_read.get() : -1, POLLIN, 0},
                     {status_read.valid() ? status_read.get() : -1, POLLIN, 0}};
    const auto progress_deadline =
        watch_progress ? last_progress + o.progress_timeout : Clock::time_point::max();
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::min({next_beat, exit_deadline, progress_deadline, next_output,
                  metrics.empty() ? Clock::time_point::max() : next_metrics}) -
        Clock::now());
    ::poll(fds, 6, static_cast<int>(std::max<int64_t>(wait.count(), 0)));
    if ((fds[3].revents | fds[4].revents) & (POLLIN | POLLHUP)) drain_output(0);
    if (Clock::now() >= next_output) send_output();
    if (!metrics.empty() && Clock::now() >= next_metrics) send_metrics();
    if (fds[5].revents & (POLLIN | POLLHUP)) {
      char buf[256];
      const ssize_t n = ::read(status_read.get(), buf, sizeof(buf));
      if (n <= 0) {
        status_read.Reset();
      } else {
        status_lines.append(buf, static_cast<size_t>(n));
        for (size_t eol; (eol = status_lines.find('\n')) != std::string::npos;) {
          const std::string line = status_lines.substr(0, eol);
          status_lines.erase(0, eol + 1);
          last_progress = Clock::now();
          if (line == "done") exit_deadline = Clock::now() + o.exit_grace;
          if (line.rfind("metrics ", 0) == 0) metrics = line.substr(8);
        }
      }
    }
    if (!exited && watch_progress && exit_deadline == Clock::time_point::max() &&
        Clock::now() >= last_progress + o.progress_timeout) {
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(o.progress_timeout);
      std::cerr << "sparktf agent " << o.executor_id << ": the TF process made no progress for "
                << secs.count() << " s; killing it\n";
      stop_child("its TF process made no progress for " + std::to_string(secs.count()) +
                     " s: its main thread stayed where it was (hung? TFCluster.run's "
                     "progress_timeout sets this limit)",
                 o.abort_kill_grace);
      stopped = false;  // this node failed
    }
    if (!exited && Clock::now() >= exit_deadline) {
      // map_fun returned and everything is reported; what is left is the interpreter's
      // teardown, where TensorFlow's runtime can wait tens of seconds for its peers.
      ::kill(-child, SIGKILL);
      ::waitpid(child, nullptr, 0);
      wait_status = 0;  // a clean exit
      exited = true;
      stop_reason = "its TF process was still exiting " +
                    std::to_string(o.exit_grace.count()) + " ms after map_fun returned; killed";
    }
    if (fds[2].revents & POLLIN) {
      std::cerr << "sparktf agent " << o.executor_id << ": the executor (pid " << o.watch_pid
                << ") ended; stopping the TF process\n";
      stop_child("the Spark executor ended", o.abort_kill_grace);
      stopped = false;
    }
    if (fds[1].revents & POLLIN) {
      signalfd_siginfo si;
      while (::read(sigfd.get(), &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGCHLD) {
          if (tensorboard > 0) ::waitpid(tensorboard, nullptr, WNOHANG);
          int st = 0;
          if (::waitpid(child, &st, WNOHANG | WUNTRACED) != child) continue;
          if (!WIFSTOPPED(st)) {
            wait_status = st;
            exited = true;
            continue;
          }
          // A stopped TF process holds up every other node (their collectives wait for
          // it), and nothing else would name it: it fails, now.
          const int stop_sig = WSTOPSIG(st);
          std::cerr << "sparktf agent " << o.executor_id << ": the TF process was stopped by "
                    << "signal " << stop_sig << " (" << ::strsignal(stop_sig)
                    << "); killing it\n";
          ::kill(-child, SIGKILL);
          stop_child("its TF process was stopped by signal " + std::to_string(stop_sig) +
                     " (" + ::strsignal(stop_sig) +
                     "), which holds up every other node of the cluster",
                     o.abort_kill_grace);
          stopped = false;  // this node failed
        } else {
          const int sig = static_cast<int>(si.ssi_signo);
          stop_child("agent received signal " + std::to_string(sig) + " (" +
                         ::strsignal(sig) + ")",
                     o.abort_kill_grace);
          stopped = false;  // not a clean stop: this node failed
        }
      }
    }
    if (!exited && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      Status st = conn.ReadAvailable();
      Frame f;
      while (st.ok()) {
        auto have = conn.NextBuffered(&f);
        if (!have.ok() || !*have) {
          st = have.status();
          break;
        }
        auto r = ReadCoordinatorFrame(f);
        if (r.ok() && r->kind == CoordinatorRequest::Kind::kAbort) {
          std::cerr << "sparktf agent " << o.executor_id << ": cluster aborted: " << r->reason
                    << "\n";
          stop_child("aborted by the coordinator", o.abort_kill_grace);
        } else if (r.ok() && r->kind == CoordinatorRequest::Kind::kStop) {
          stop_child("stopped by the coordinator", o.kill_grace);
        }
      }
      if (!st.ok() && !exited) {
        coordinator_gone = true;
        std::cerr << "sparktf agent " << o.executor_id << ": lost the coordinator ("
                  << st.message() << "); stopping the TF process\n";
        stop_child("coordinator gone", o.abort_kill_grace);
      }
    }
    if (!exited && Clock::now() >= next_beat) {
      if (!conn.Send(MessageType::kHeartbeat, running.dump()).ok()) {
        coordinator_gone = true;
        stop_child("coordinator gone", o.abort_kill_grace);
      }
      next_beat = Clock::now() + o.heartbeat_interval;
    }
  }
  ::kill(-child, SIGKILL);  // anything the TF process left in its group
  // Read, then remove, the error file and its directory before anything slow: a container
  // manager may SIGKILL this agent soon after the TERM that stopped the TF process.
  const std::string traceback = ReadSmallFile(o.error_file);
  if (!o.error_file.empty()) {
    ::unlink(o.error_file.c_str());
    const auto slash = o.error_file.rfind('/');
    if (slash != std::string::npos && slash > 0) ::rmdir(o.error_file.substr(0, slash).c_str());
  }
  if (tensorboard > 0) KillGroup(tensorboard, 2s);
  drain_output(200);
  output.FinishPartial();
  send_output();
  send_metrics();  // the last report, which ends training  // before the exit report, so the driver has it when it learns of the exit
  const int code = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 0;
  const int sig = WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
  if (feeds) {
    std::string why = sig ? "killed by signal " + std::to_string(sig)
                          : "exited with code " + std::to_string(code);
    if (!traceback.empty()) why += ":\n" + traceback;
    feeds->ConsumerExited(why);
    feed::SweepStaleRings(ring_prefix);  // its rings, even if it was killed
  }
  if (!coordinator_gone) {
    json report = {{"exit_code", code}, {"signal", sig}, {"stopped", stopped},
                   {"reason", stop_reason}, {"traceback", traceback},
                   {"stderr_tail", tail.str()}};
    // Wait for the ack, passing over a STOP or ABORT that crossed the report.
    if (conn.Send(MessageType::kReportExit, report.dump()).ok()) {
      const auto deadline = Clock::now() + 5s;
      while (Clock::now() < deadline) {
        auto f = conn.Receive(std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - Clock::now()));
        if (!f.ok() || f->type == MessageType::kReportAck) break;
      }
    }
  }
  if (stopped && stop_reason == "stopped by the coordinator") return 0;
  if (stopped || coordinator_gone) return code != 0 ? code : (sig ? 128 + sig : 1);
  return sig ? 128 + sig : code;
}

}  // namespace sparktf::node
