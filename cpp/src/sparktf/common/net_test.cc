#include "sparktf/common/net.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

namespace sparktf {
namespace {

// An IPv6-only listener on a free port, or an invalid fd where IPv6 is off.
UniqueFd ListenV6Only(int* port) {
  UniqueFd fd(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return fd;
  int one = 1;
  ::setsockopt(fd.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  sockaddr_in6 addr{};
  addr.sin6_family = AF_INET6;
  addr.sin6_addr = in6addr_loopback;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(fd.get(), 4) != 0) {
    return UniqueFd();
  }
  *port = LocalPort(fd.get());
  return fd;
}

// The answer of TcpPortListening, which must agree with its sock_diag query (which
// must not fail here: the fallback would hide a broken query) and with /proc/net/tcp.
bool Listening(int port) {
  auto r = TcpPortListening(port);
  auto by_diag = TcpPortListeningByDiag(port);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(by_diag.ok()) << by_diag.status().ToString();
  if (!r.ok() || !by_diag.ok()) return false;
  EXPECT_EQ(*by_diag, *r);
  EXPECT_EQ(TcpPortListeningInProc(port), *r);
  return *r;
}

TEST(TcpPortListening, SeesAListenerAndNotABoundSocketNorAClosedOne) {
  auto listener = ListenTcp("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok()) << listener.status().ToString();
  const int port = LocalPort(listener->get());
  EXPECT_TRUE(Listening(port));

  int reserved = 0;
  auto bound = ReservePort(&reserved);  // bound, not listening: what a node holds
  ASSERT_TRUE(bound.ok());
  EXPECT_FALSE(Listening(reserved));

  listener->Reset();
  EXPECT_FALSE(Listening(port));
}

TEST(TcpPortListening, SeesAnIpv6OnlyListener) {
  int port = 0;
  UniqueFd v6 = ListenV6Only(&port);
  if (!v6.valid()) GTEST_SKIP() << "no IPv6 loopback here";
  EXPECT_TRUE(Listening(port));
}

TEST(TcpPortListening, RejectsAPortOutOfRange) {
  EXPECT_FALSE(TcpPortListening(0).ok());
  EXPECT_FALSE(TcpPortListening(65536).ok());
}

}  // namespace
}  // namespace sparktf
