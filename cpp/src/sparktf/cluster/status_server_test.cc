// The status endpoint: its routing and access check, then a real server on loopback read
// with the status client, and the status table.
#include "sparktf/cluster/status_server.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>

#include "sparktf/cluster/status_client.h"
#include "sparktf/cluster/status_table.h"
#include "sparktf/common/net.h"

namespace sparktf::cluster {
namespace {

using namespace std::chrono_literals;
using json = nlohmann::json;

const std::string kToken = "c0ffee00c0ffee00c0ffee00c0ffee00";
const std::string kReadOnly = "0123456789abcdef0123456789abcdef";

StatusServerOptions Options() {
  StatusServerOptions o;
  o.tokens = {kToken, kReadOnly};
  o.assets["/index.html"] = {"text/html; charset=utf-8", "<html>page</html>"};
  o.assets["/static/app.js"] = {"text/javascript", "let x = 1;"};
  return o;
}

const StatusSource kSource{[] { return std::string(R"({"nodes": []})"); },
                           [] { return std::string(R"({"samples": []})"); }};

std::string Header(const StatusReply& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST(StatusRouteTest, EveryWayOfGivingTheTokenAndNothingWithoutIt) {
  const auto o = Options();
  auto get = [&](std::string target, std::string auth = "", std::string cookie = "") {
    return RouteStatusRequest({"GET", std::move(target), std::move(auth), std::move(cookie)}, o,
                              kSource);
  };
  for (const auto& r : {get("/"), get("/api/status"), get("/api/status?token=wrong"),
                        get("/api/history", "Bearer " + kToken + "x"),
                        get("/api/status", "Basic " + kToken),
                        get("/", "", "sparktf_token=" + kToken.substr(1)),
                        get("/nothing")}) {
    EXPECT_EQ(r.status, 401);
    EXPECT_EQ(Header(r, "WWW-Authenticate"), "Bearer realm=\"sparktf\"");
    EXPECT_NE(r.body.find("token"), std::string::npos);
  }
  StatusReply r = get("/api/status?x=1&token=" + kReadOnly);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "application/json");
  EXPECT_EQ(r.body, R"({"nodes": []})");
  EXPECT_EQ(Header(r, "Set-Cookie"), "sparktf_token=" + kReadOnly + "; Path=/; HttpOnly; SameSite=Strict");
  r = get("/api/history", "Bearer " + kToken);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, R"({"samples": []})");
  EXPECT_EQ(Header(r, "Set-Cookie"), "");  // only a token in the URL is made a cookie
  r = get("/", "", "theme=dark; sparktf_token=" + kToken);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "<html>page</html>");
  r = get("/static/app.js", "", "sparktf_token=" + kToken);
  EXPECT_EQ(r.content_type, "text/javascript");
  EXPECT_EQ(get("/static/../index.html", "Bearer " + kToken).status, 404);
  EXPECT_EQ(get("/nothing", "Bearer " + kToken).status, 404);
  r = RouteStatusRequest({"POST", "/api/status?token=" + kToken, "", ""}, o, kSource);
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(Header(r, "Allow"), "GET, HEAD");
}

TEST(StatusServerTest, ServesOverHttpWithTheTokenAndRefusesWithout) {
  std::atomic<int> calls{0};
  auto o = Options();
  auto server = StatusServer::Start(o, {[&] {
                                          ++calls;
                                          return std::string(R"({"nodes": [], "n": 1})");
                                        },
                                        kSource.history});
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  const std::string url = "http://127.0.0.1:" + std::to_string((*server)->port());
  auto body = FetchStatusPath(url + "/?token=" + kToken, "", "/api/status", 5s);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(json::parse(*body)["n"], 1);
  EXPECT_EQ(calls.load(), 1);
  body = FetchStatusPath(url, kReadOnly, "/api/history", 5s);
  ASSERT_TRUE(body.ok()) << body.status().ToString();
  EXPECT_EQ(*body, R"({"samples": []})");
  body = FetchStatusPath(url, "", "/api/status", 5s);
  EXPECT_EQ(body.status().code(), StatusCode::kUnauthenticated) << body.status().ToString();
  body = FetchStatusPath(url, "nope", "/api/status", 5s);
  EXPECT_EQ(body.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(calls.load(), 1);  // refused requests never reach the cluster
  body = FetchStatusPath(url, kToken, "/missing", 5s);
  EXPECT_EQ(body.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(body.status().message().find("404"), std::string::npos);

  // A garbage request is answered 400; a silent connection is closed at the timeout.
  auto conn = ConnectTcp({"127.0.0.1", (*server)->port()}, 2s);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(WriteAll(conn->get(), "NOT HTTP AT ALL\r\n\r\n").ok());
  char buf[256] = {};
  ssize_t n = ::read(conn->get(), buf, sizeof(buf) - 1);
  ASSERT_GT(n, 0);
  EXPECT_EQ(std::string(buf).substr(0, 12), "HTTP/1.1 400");

  (*server)->Shutdown();
  body = FetchStatusPath(url, kToken, "/api/status", 2s);
  EXPECT_EQ(body.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(body.status().message().find("has the cluster ended?"), std::string::npos);
}

TEST(StatusServerTest, NeedsATokenAndListensOnEveryHostOnOnePort) {
  auto o = Options();
  o.tokens = {""};
  EXPECT_EQ(StatusServer::Start(o, kSource).status().code(), StatusCode::kInvalidArgument);
  o = Options();
  o.hosts = {"127.0.0.1", "127.0.0.2"};
  auto server = StatusServer::Start(o, kSource);
  ASSERT_TRUE(server.ok()) << server.status().ToString();
  for (const char* host : {"127.0.0.1", "127.0.0.2"}) {
    auto body = FetchStatusPath(std::string("http://") + host + ":" +
                                    std::to_string((*server)->port()),
                                kToken, "/api/status", 5s);
    EXPECT_TRUE(body.ok()) << host << ": " << body.status().ToString();
  }
  o.hosts = {"not-an-ip"};
  EXPECT_EQ(StatusServer::Start(o, kSource).status().code(), StatusCode::kInvalidArgument);
  o.hosts = {"127.0.0.1"};
  o.port = (*server)->port();
  EXPECT_EQ(StatusServer::Start(o, kSource).status().code(), StatusCode::kUnavailable);
}

TEST(StatusUrlTest, TheDriversUrlAndBareAddresses) {
  auto u = ParseStatusUrl("http://10.0.0.5:4050/?token=abc&x=1");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "10.0.0.5");
  EXPECT_EQ(u->port, 4050);
  EXPECT_EQ(u->token, "abc");
  u = ParseStatusUrl("[::1]:80");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->token, "");
  EXPECT_FALSE(ParseStatusUrl("https://h:1/").ok());
  EXPECT_FALSE(ParseStatusUrl("http://h:99999/").ok());
  EXPECT_FALSE(ParseStatusUrl("http://:80/").ok());
}

TEST(StatusTableTest, OneRowANodeWithItsProgressInputAndErrors) {
  const json status = {
      {"num_nodes", 2}, {"registered", 2}, {"generation", 1}, {"uptime_s", 75.0},
      {"aborted", true}, {"abort_reason", "worker:1 failed"},
      {"totals", {{"nodes", {{"running", 1}, {"exited", 1}, {"lost", 0}}},
                  {"rows_taken", 1200}, {"rows_fed", 1300}, {"rows_per_sec", 410.4}}},
      {"nodes",
       {{{"name", "chief:0"}, {"host", "10.0.0.1"}, {"executor_id", 0}, {"pid", 4242},
         {"phase", "running"}, {"uptime_s", 70.2}, {"heartbeat_age_s", 0.4},
         {"training", {{"epoch", 2}, {"step", 1500}, {"steps_per_sec", 25.04},
                       {"metrics", {{"loss", 0.123456}}}}},
         {"input", {{"rows_taken", 1200}, {"rows_per_sec", 410.4}, {"stall", 0.05},
                    {"ring_fill", 0.5}}},
         {"straggler", true}, {"traceback", ""}},
        {{"name", "worker:0"}, {"host", "10.0.0.2"}, {"executor_id", 1}, {"pid", 7},
         {"phase", "exited"}, {"exit_code", 1}, {"uptime_s", 3700.0},
         {"traceback", "Traceback (most recent call last):\nValueError: bad row\n"},
         {"training", nullptr}, {"input", nullptr}}}}};
  auto table = FormatStatusTable(status.dump());
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_EQ(*table,
            "sparktf cluster: 2 of 2 nodes registered, 1 running, 1 exited, 0 lost; "
            "generation 1; up 75s; rows taken 1200 of 1300 fed (410 rows/s)\n"
            "NODE      HOST      EXECUTOR  PID   STATE    GEN  UP    BEAT  EPOCH  STEP  "
            "STEP/S  LOSS    ROWS  ROWS/S  STALL  RING  NOTE\n"
            "chief:0   10.0.0.1  0         4242  running  1    70s   0s    2      1500  "
            "25.0    0.1235  1200  410     5%     50%   straggler\n"
            "worker:0  10.0.0.2  1         7     exited   1    1h1m  -     -      -     "
            "-       -       -     -       -      -     failed\n"
            "error: worker:0: ValueError: bad row\n"
            "aborted: worker:1 failed\n");
  EXPECT_EQ(FormatStatusTable("[]").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(FormatStatusTable("not json").status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace sparktf::cluster
