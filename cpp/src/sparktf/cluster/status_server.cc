#include "sparktf/cluster/status_server.h"

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <optional>
#include <string_view>
#include <thread>

namespace sparktf::cluster {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr std::string_view kCookieName = "sparktf_token";

// Compares in time that depends on the lengths only, not on where they differ.
bool SameSecret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

bool Allowed(std::string_view candidate, const std::vector<std::string>& tokens) {
  bool ok = false;
  for (const auto& t : tokens) ok |= !t.empty() && SameSecret(candidate, t);
  return ok;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The value of `key` in "a=1<sep>b=2", or nullopt.
std::optional<std::string_view> Field(std::string_view list, char sep, std::string_view key) {
  while (!list.empty()) {
    const size_t end = list.find(sep);
    std::string_view item = Trim(list.substr(0, end));
    list = end == std::string_view::npos ? std::string_view{} : list.substr(end + 1);
    const size_t eq = item.find('=');
    if (eq != std::string_view::npos && item.substr(0, eq) == key) return item.substr(eq + 1);
  }
  return std::nullopt;
}

StatusReply Text(int status, std::string body) {
  return {status, "text/plain; charset=utf-8", std::move(body) + "\n", {}};
}

StatusReply Json(int status, std::string body) {
  return {status, "application/json", std::move(body), {}};
}

}  // namespace

StatusReply RouteStatusRequest(const StatusRequest& request, const StatusServerOptions& options,
                               const StatusSource& source) {
  if (request.method != "GET" && request.method != "HEAD") {
    StatusReply r = Text(405, "only GET and HEAD");
    r.headers.emplace_back("Allow", "GET, HEAD");
    return r;
  }
  std::string_view target = request.target;
  const size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  const std::string_view query =
      q == std::string_view::npos ? std::string_view{} : target.substr(q + 1);

  const auto from_query = Field(query, '&', "token");
  std::optional<std::string_view> from_header;
  std::string_view auth = Trim(request.authorization);
  if (auth.substr(0, 7) == "Bearer ") from_header = Trim(auth.substr(7));
  const auto from_cookie = Field(request.cookie, ';', kCookieName);
  const bool by_query = from_query && Allowed(*from_query, options.tokens);
  if (!by_query && !(from_header && Allowed(*from_header, options.tokens)) &&
      !(from_cookie && Allowed(*from_cookie, options.tokens))) {
    StatusReply r = Json(401, R"({"error": "this needs the cluster's status token: )"
                              R"(open the URL that the driver printed (?token=...) or send )"
                              R"(Authorization: Bearer <token>"})");
    r.headers.emplace_back("WWW-Authenticate", R"(Bearer realm="sparktf")");
    return r;
  }

  StatusReply reply;
  if (path == "/api/status" && source.status) {
    reply = Json(200, source.status());
  } else if (path == "/api/history" && source.history) {
    reply = Json(200, source.history());
  } else {
    const std::string name = path == "/" ? "/index.html" : std::string(path);
    auto it = options.assets.find(name);
    if (it == options.assets.end()) return Text(404, "no such page: " + std::string(path));
    reply = {200, it->second.content_type, it->second.body, {}};
  }
  if (by_query) {
    reply.headers.emplace_back("Set-Cookie", std::string(kCookieName) + "=" +
                                                 std::string(*from_query) +
                                                 "; Path=/; HttpOnly; SameSite=Strict");
  }
  return reply;
}

struct StatusServer::Impl {
  StatusServerOptions options;
  StatusSource source;
  asio::io_context io{1};
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  std::thread thread;
  int port = 0;
  bool stopped = false;

  void AcceptOn(tcp::acceptor& acceptor);
};

namespace {

// One connection: requests read and answered in turn (keep-alive), each within the
// request timeout.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const StatusServerOptions& options, const StatusSource& source)
      : stream_(std::move(socket)), options_(options), source_(source) {}

  void Read() {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(16 * 1024);
    stream_.expires_after(options_.request_timeout);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) {
                       self->OnRead(ec);
                     });
  }

 private:
  void OnRead(beast::error_code ec) {
    if (ec) {
      // A malformed or oversized request gets its answer; anything else just closes.
      if (ec != http::error::end_of_stream && ec != beast::error::timeout &&
          ec != asio::error::operation_aborted && ec.category() == http::make_error_code(http::error::bad_target).category()) {
        Send(Text(400, "bad request: " + ec.message()), false, false);
      } else {
        Close();
      }
      return;
    }
    const auto& req = parser_->get();
    StatusRequest request{std::string(req.method_string()), std::string(req.target()),
                          std::string(req[http::field::authorization]),
                          std::string(req[http::field::cookie])};
    Send(RouteStatusRequest(request, options_, source_), req.keep_alive(),
         req.method() == http::verb::head);
  }

  void Send(StatusReply reply, bool keep_alive, bool head) {
    auto res = std::make_shared<http::response<http::string_body>>(
        static_cast<http::status>(reply.status), 11);
    res->set(http::field::server, "sparktf");
    res->set(http::field::content_type, reply.content_type);
    res->set(http::field::cache_control, "no-store");
    res->set("X-Content-Type-Options", "nosniff");
    for (const auto& [name, value] : reply.headers) res->set(name, value);
    res->keep_alive(keep_alive);
    res->body() = std::move(reply.body);
    res->prepare_payload();
    if (head) res->body().clear();  // Content-Length stays that of the GET
    stream_.expires_after(options_.request_timeout);
    http::async_write(stream_, *res,
                      [self = shared_from_this(), res, keep_alive](beast::error_code ec, size_t) {
                        if (ec || !keep_alive) return self->Close();
                        self->Read();
                      });
  }

  void Close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const StatusServerOptions& options_;
  const StatusSource& source_;
};

}  // namespace

void StatusServer::Impl::AcceptOn(tcp::acceptor& acceptor) {
  acceptor.async_accept(asio::make_strand(io), [this, &acceptor](beast::error_code ec,
                                                                 tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec) std::make_shared<Session>(std::move(socket), options, source)->Read();
    AcceptOn(acceptor);
  });
}

StatusServer::StatusServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

StatusServer::~StatusServer() { Shutdown(); }

int StatusServer::port() const { return impl_->port; }

namespace {

// Listens on every host on one port (`port`, or one that is free on the first host).
Result<std::vector<std::unique_ptr<tcp::acceptor>>> Listen(asio::io_context& io,
                                                           const std::vector<std::string>& hosts,
                                                           int* port) {
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors;
  for (const auto& host : hosts) {
    beast::error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec) {
      return Status::InvalidArgument("status server: '" + host +
                                     "' is not an IP address to listen on");
    }
    auto acceptor = std::make_unique<tcp::acceptor>(io);
    const tcp::endpoint endpoint(address, static_cast<unsigned short>(*port));
    acceptor->open(endpoint.protocol(), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(endpoint, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Status::Unavailable("status server: cannot listen on " + host + ":" +
                                 std::to_string(*port) + ": " + ec.message());
    }
    *port = acceptor->local_endpoint().port();
    acceptors.push_back(std::move(acceptor));
  }
  return acceptors;
}

}  // namespace

Result<std::unique_ptr<StatusServer>> StatusServer::Start(const StatusServerOptions& options,
                                                          StatusSource source) {
  bool any_token = false;
  for (const auto& t : options.tokens) any_token |= !t.empty();
  if (!any_token) return Status::InvalidArgument("the status server needs a token");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (impl->options.hosts.empty()) impl->options.hosts = {"127.0.0.1"};
  impl->source = std::move(source);
  // With a free port, the one the first host got may be taken on another: try again.
  for (int attempt = 0;; ++attempt) {
    int port = options.port;
    auto acceptors = Listen(impl->io, impl->options.hosts, &port);
    if (acceptors.ok()) {
      impl->acceptors = std::move(*acceptors);
      impl->port = port;
      break;
    }
    if (options.port != 0 || attempt == 4 ||
        acceptors.status().code() != StatusCode::kUnavailable) {
      return acceptors.status();
    }
  }
  for (auto& acceptor : impl->acceptors) impl->AcceptOn(*acceptor);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->io.run(); });
  return std::unique_ptr<StatusServer>(new StatusServer(std::move(impl)));
}

void StatusServer::Shutdown() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  impl_->io.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  for (auto& acceptor : impl_->acceptors) {
    beast::error_code ignored;
    acceptor->close(ignored);
  }
}

}  // namespace sparktf::cluster
