// The status endpoint: an HTTP/1.1 server on the driver (Boost.Beast, one thread of its
// own) that serves the cluster's status as JSON and the status page's files, to requests
// that carry one of its tokens.
//
//   GET /                 the page (asset "/index.html")
//   GET /static/<name>    the page's other files (asset "/static/<name>")
//   GET /api/status       StatusSource::status (ClusterState::StatusJson)
//   GET /api/history      StatusSource::history (ClusterState::HistoryJson)
//
// A token is accepted from "Authorization: Bearer <token>", from "?token=<token>" (then
// set as the HttpOnly cookie sparktf_token, so that the page's own requests carry it),
// or from that cookie. Anything else is 401; other methods than GET and HEAD are 405.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sparktf/common/result.h"

namespace sparktf::cluster {

struct StaticAsset {
  std::string content_type;
  std::string body;
};

struct StatusServerOptions {
  // Every address it listens on, all on one port. Empty: 127.0.0.1.
  std::vector<std::string> hosts;
  int port = 0;  // 0: a free port (the same on every host)
  // Any of them grants access (the cluster's token, and a read-only one). Must not be
  // empty: the server refuses to start without a token.
  std::vector<std::string> tokens;
  std::map<std::string, StaticAsset> assets;  // by path: "/index.html", "/static/app.js"
  // A connection that sends no complete request for this long is closed.
  std::chrono::milliseconds request_timeout{10000};
};

// Where the JSON comes from; called on the server's thread, so they must be thread-safe.
struct StatusSource {
  std::function<std::string()> status;
  std::function<std::string()> history;
};

// One request, as far as the routing needs it.
struct StatusRequest {
  std::string method;         // "GET"
  std::string target;         // "/api/status?token=..."
  std::string authorization;  // the Authorization header, or ""
  std::string cookie;         // the Cookie header, or ""
};

struct StatusReply {
  int status = 200;
  std::string content_type;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;  // extra ones
};

// The answer to `request` (the server's routing and access check, without sockets).
StatusReply RouteStatusRequest(const StatusRequest& request, const StatusServerOptions& options,
                               const StatusSource& source);

class StatusServer {
 public:
  // Listens on every host (InvalidArgument for a bad host, Unavailable when the port is
  // taken) and serves until Shutdown.
  static Result<std::unique_ptr<StatusServer>> Start(const StatusServerOptions& options,
                                                     StatusSource source);
  ~StatusServer();
  StatusServer(const StatusServer&) = delete;
  StatusServer& operator=(const StatusServer&) = delete;

  int port() const;
  // Stops serving and joins its thread. Idempotent.
  void Shutdown();

 private:
  struct Impl;
  explicit StatusServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sparktf::cluster
