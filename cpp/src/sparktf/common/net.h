// Minimal POSIX TCP helpers. File descriptors are owned by UniqueFd.
#pragma once

#include <chrono>
#include <string>
#include <utility>

#include "sparktf/common/result.h"

namespace sparktf {

// Owns a file descriptor; closes it on destruction (a close error there is
// ignored: these are sockets and pipes, not files with data to flush).
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      Reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

struct HostPort {
  std::string host;
  int port = 0;
  std::string ToString() const;
};

// Parses "host:port" (IPv4 or a name; "[v6]:port" for IPv6).
Result<HostPort> ParseHostPort(const std::string& s);

// A listening TCP socket on host:port (port 0 picks a free one).
Result<UniqueFd> ListenTcp(const std::string& host, int port, int backlog = 128);

// Binds (without listening) a TCP socket to a free port on all interfaces with
// SO_REUSEADDR and SO_REUSEPORT, which reserves the port against other
// programs while still letting a server that sets SO_REUSEPORT (gRPC does)
// bind it. *port receives the port.
Result<UniqueFd> ReservePort(int* port);

// Whether a TCP socket of this machine's network namespace listens on `port` (any
// address, IPv4 or IPv6). Asks the kernel's sock_diag netlink interface for listening
// sockets only, which costs microseconds; /proc/net/tcp, the fallback where netlink is
// refused, walks the whole established-connection table on every read (about 10 ms
// on a machine with 24 GiB), too slow to poll.
Result<bool> TcpPortListening(int port);
// Its two ways, apart so that tests check each: the sock_diag query (an error where
// netlink is refused) and /proc/net/tcp and tcp6.
Result<bool> TcpPortListeningByDiag(int port);
bool TcpPortListeningInProc(int port);

// Connects with a deadline; the error names the address ("connect 10.0.0.5:4711:
// Connection refused"). A non-empty `local_ip` is the source address (the interface
// this host's Spark uses, when a machine has several).
Result<UniqueFd> ConnectTcp(const HostPort& addr, std::chrono::milliseconds timeout,
                            const std::string& local_ip = "");
// TCP_USER_TIMEOUT: the connection fails (ETIMEDOUT) when data it sent stays
// unacknowledged this long, as when the peer's host is cut off: no RST ever comes.
Status SetTcpUserTimeout(int fd, std::chrono::milliseconds timeout);

// A listening Unix socket in the abstract namespace (nothing on disk; gone
// with the process). `name` excludes the leading NUL.
Result<UniqueFd> ListenUnixAbstract(const std::string& name, int backlog = 128);
// Connects to one; NotFound when nobody listens under that name on this host.
Result<UniqueFd> ConnectUnixAbstract(const std::string& name);

int LocalPort(int fd);
std::string LocalAddress(int fd);  // the IP this socket uses, e.g. "10.0.0.7"
Status SetNonBlocking(int fd, bool on);

// Writes all of data (blocking fd), or fails.
Status WriteAll(int fd, std::string_view data);

}  // namespace sparktf
