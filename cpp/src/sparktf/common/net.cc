#include "sparktf/common/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
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
#include <fstream>
#include <sstream>

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

namespace {

constexpr int kTcpListenState = 10;  // TCP_LISTEN in the kernel's tcp_states.h

// One sock_diag dump of the listening TCP sockets of `family` on `port`: true if there
// is one; an error if netlink refuses.
Result<bool> DiagListening(int family, int port) {
  UniqueFd fd(::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG));
  if (!fd.valid()) return Status::FromErrno("netlink socket", errno);
  struct {
    nlmsghdr header;
    inet_diag_req_v2 request;
  } query{};
  query.header.nlmsg_len = sizeof(query);
  query.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  query.header.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  query.request.sdiag_family = static_cast<uint8_t>(family);
  query.request.sdiag_protocol = IPPROTO_TCP;
  query.request.idiag_states = 1u << kTcpListenState;  // the listening table only
  query.request.id.idiag_sport = htons(static_cast<uint16_t>(port));
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(fd.get(), &query, sizeof(query), 0, reinterpret_cast<sockaddr*>(&kernel),
               sizeof(kernel)) != static_cast<ssize_t>(sizeof(query))) {
    return Status::FromErrno("sock_diag query", errno);
  }
  alignas(nlmsghdr) char buffer[16384];
  bool found = false;
  for (;;) {
    ssize_t n = ::recv(fd.get(), buffer, sizeof(buffer), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno("sock_diag reply", errno);
    }
    // Walks the reply's messages (NLMSG_OK/NLMSG_NEXT, without their sign mix).
    for (size_t at = 0; at + sizeof(nlmsghdr) <= static_cast<size_t>(n);) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(buffer + at);
      if (h->nlmsg_len < sizeof(nlmsghdr) || at + h->nlmsg_len > static_cast<size_t>(n)) break;
      at += NLMSG_ALIGN(h->nlmsg_len);
      if (h->nlmsg_type == NLMSG_DONE) return found;
      if (h->nlmsg_type == NLMSG_ERROR) {
        const auto* e = static_cast<const nlmsgerr*>(NLMSG_DATA(h));
        return Status::FromErrno("sock_diag", -e->error);
      }
      if (h->nlmsg_len < NLMSG_LENGTH(sizeof(inet_diag_msg))) continue;
      const auto* m = static_cast<const inet_diag_msg*>(NLMSG_DATA(h));
      // Older kernels ignore idiag_sport in a dump: check the port of each.
      if (m->idiag_state == kTcpListenState && ntohs(m->id.idiag_sport) == port) found = true;
    }
    if (n == 0) return found;
  }
}

}  // namespace

Result<bool> TcpPortListeningByDiag(int port) {
  bool any = false;
  for (int family : {AF_INET, AF_INET6}) {
    ASSIGN_OR_RETURN(bool found, DiagListening(family, port));
    any = any || found;
  }
  return any;
}

// A listening socket's line in /proc/net/tcp{,6} has its local port in hex after the
// address's colon and state 0A.
bool TcpPortListeningInProc(int port) {
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // the header
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state;
      if (!(fields >> slot >> local >> remote >> state) || state != "0A") continue;
      size_t colon = local.rfind(':');
      if (colon != std::string::npos &&
          std::strtol(local.c_str() + colon + 1, nullptr, 16) == port) {
        return true;
      }
    }
  }
  return false;
}

Result<bool> TcpPortListening(int port) {
  if (port <= 0 || port > 65535) {
    return Status::InvalidArgument("port " + std::to_string(port) + " is out of range");
  }
  auto by_diag = TcpPortListeningByDiag(port);
  return by_diag.ok() ? *by_diag : TcpPortListeningInProc(port);
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
