#include "sparktf/common/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace sparktf {

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

std::string HostPort::ToString() const {
  if (host.find(':') != std::string::npos) return "[" + host + "]:" + std::to_string(port);
  return host + ":" + std::to_string(port);
}

Result<HostPort> ParseHostPort(const std::string& s) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == s.size()) {
    return Status::InvalidArgument("'" + s + "' is not host:port");
  }
  HostPort hp;
  hp.host = s.substr(0, colon);
  if (hp.host.front() == '[' && hp.host.back() == ']') {
    hp.host = hp.host.substr(1, hp.host.size() - 2);
  }
  const std::string port = s.substr(colon + 1);
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (*end != '\0' || p <= 0 || p > 65535) {
    return Status::InvalidArgument("'" + s + "': bad port");
  }
  hp.port = static_cast<int>(p);
  return hp;
}

namespace {

Result<addrinfo*> Resolve(const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) {
    return Status::Unavailable("resolve " + host + ": " + ::gai_strerror(rc));
  }
  return res;
}

}  // namespace

Result<UniqueFd> ListenTcp(const std::string& host, int port, int backlog) {
  ASSIGN_OR_RETURN(addrinfo * res, Resolve(host, port, true));
  Status last = Status::Unavailable("listen " + host + ": no address");
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 &&
        ::listen(fd.get(), backlog) == 0) {
      ::freeaddrinfo(res);
      return fd;
    }
    last = Status::FromErrno("listen " + HostPort{host, port}.ToString(), errno);
  }
  ::freeaddrinfo(res);
  return last;
}

Result<UniqueFd> ReservePort(int* port) {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno("socket", errno);
  int one = 1;
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Status::FromErrno("reserve a port", errno);
  }
  *port = LocalPort(fd.get());
  return fd;
}

Result<UniqueFd> ConnectTcp(const HostPort& addr, std::chrono::milliseconds timeout,
                            const std::string& local_ip) {
  const std::string where = "connect " + addr.ToString();
  addrinfo* local = nullptr;
  if (!local_ip.empty()) {
    auto r = Resolve(local_ip, 0, true);
    if (!r.ok()) return r.status().WithContext(where + " from " + local_ip);
    local = *r;
  }
  ASSIGN_OR_RETURN(addrinfo * res, Resolve(addr.host, addr.port, false));
  Status last = Status::Unavailable(where + ": no address");
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0));
    if (!fd.valid()) continue;
    if (local) {
      const addrinfo* src = local;
      while (src && src->ai_family != ai->ai_family) src = src->ai_next;
      if (!src || ::bind(fd.get(), src->ai_addr, src->ai_addrlen) != 0) {
        last = Status::FromErrno(where + " from " + local_ip, src ? errno : EAFNOSUPPORT);
        continue;
      }
    }
    RETURN_NOT_OK(SetNonBlocking(fd.get(), true));
    int rc = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
      if (rc == 0) {
        last = Status::DeadlineExceeded(where + ": timed out after " +
                                        std::to_string(timeout.count()) + " ms");
        continue;
      }
      int err = 0;
      socklen_t len = sizeof(err);
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      rc = err == 0 ? 0 : -1;
      errno = err;
    }
    if (rc == 0) {
      RETURN_NOT_OK(SetNonBlocking(fd.get(), false));
      int one = 1;
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      ::freeaddrinfo(res);
      if (local) ::freeaddrinfo(local);
      return fd;
    }
    last = Status::FromErrno(where, errno);
  }
  ::freeaddrinfo(res);
  if (local) ::freeaddrinfo(local);
  return last;
}

Status SetTcpUserTimeout(int fd, std::chrono::milliseconds timeout) {
  const unsigned ms = static_cast<unsigned>(timeout.count());
  if (::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms)) != 0) {
    return Status::FromErrno("TCP_USER_TIMEOUT", errno);
  }
  return Status::OK();
}

namespace {
Result<sockaddr_un> AbstractAddress(const std::string& name, socklen_t* len) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (name.empty() || name.size() + 1 > sizeof(addr.sun_path)) {
    return Status::InvalidArgument("bad abstract socket name '" + name + "'");
  }
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return addr;
}
}  // namespace

Result<UniqueFd> ListenUnixAbstract(const std::string& name, int backlog) {
  socklen_t len = 0;
  ASSIGN_OR_RETURN(sockaddr_un addr, AbstractAddress(name, &len));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno("socket", errno);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return Status::FromErrno("bind @" + name, errno);
  }
  if (::listen(fd.get(), backlog) != 0) return Status::FromErrno("listen @" + name, errno);
  return fd;
}

Result<UniqueFd> ConnectUnixAbstract(const std::string& name) {
  socklen_t len = 0;
  ASSIGN_OR_RETURN(sockaddr_un addr, AbstractAddress(name, &len));
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Status::FromErrno("socket", errno);
  while (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    if (errno == EINTR) continue;
    if (errno == ECONNREFUSED || errno == ENOENT) {
      return Status::NotFound("no process listens on @" + name + " on this host");
    }
    return Status::FromErrno("connect @" + name, errno);
  }
  return fd;
}

int LocalPort(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return -1;
  if (ss.ss_family == AF_INET) return ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port);
}

std::string LocalAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "";
  char buf[INET6_ADDRSTRLEN] = {};
  if (ss.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(&ss)->sin_addr, buf, sizeof(buf));
  } else {
    ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(&ss)->sin6_addr, buf, sizeof(buf));
  }
  return buf;
}

Status SetNonBlocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0) return Status::FromErrno("fcntl", errno);
  flags = on ? (flags | O_NONBLOCK) : (flags & ~O_NONBLOCK);
  if (::fcntl(fd, F_SETFL, flags) < 0) return Status::FromErrno("fcntl", errno);
  return Status::OK();
}

Status WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("send", errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::OK();
}

}  // namespace sparktf
