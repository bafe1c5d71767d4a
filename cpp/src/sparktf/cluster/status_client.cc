#include "sparktf/cluster/status_client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace sparktf::cluster {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

Result<StatusUrl> ParseStatusUrl(const std::string& url) {
  std::string rest = url;
  const std::string scheme = "http://";
  if (rest.rfind("https://", 0) == 0) {
    return Status::InvalidArgument("the status endpoint serves http://, not https:// (" + url + ")");
  }
  if (rest.rfind(scheme, 0) == 0) rest = rest.substr(scheme.size());
  StatusUrl out;
  const size_t q = rest.find('?');
  if (q != std::string::npos) {
    std::string query = rest.substr(q + 1);
    rest = rest.substr(0, q);
    size_t start = 0;
    while (start <= query.size()) {
      const size_t end = std::min(query.find('&', start), query.size());
      const std::string item = query.substr(start, end - start);
      if (item.rfind("token=", 0) == 0) out.token = item.substr(6);
      start = end + 1;
    }
  }
  const std::string authority = rest.substr(0, rest.find('/'));
  std::string port;
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) return Status::InvalidArgument("bad status URL: " + url);
    out.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') port = authority.substr(close + 2);
  } else {
    const size_t colon = authority.rfind(':');
    out.host = authority.substr(0, colon);
    if (colon != std::string::npos) port = authority.substr(colon + 1);
  }
  if (out.host.empty()) return Status::InvalidArgument("bad status URL (no host): " + url);
  if (!port.empty()) {
    char* end = nullptr;
    const long p = std::strtol(port.c_str(), &end, 10);
    if (*end != '\0' || p <= 0 || p > 65535) {
      return Status::InvalidArgument("bad status URL (port '" + port + "'): " + url);
    }
    out.port = static_cast<int>(p);
  }
  return out;
}

Result<std::string> FetchStatusPath(const std::string& url, const std::string& token,
                                    const std::string& path, std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(StatusUrl where, ParseStatusUrl(url));
  const std::string use_token = token.empty() ? where.token : token;
  const std::string address = where.host + ":" + std::to_string(where.port);
  asio::io_context io;
  beast::tcp_stream stream(io);
  beast::error_code ec;
  tcp::resolver resolver(io);
  const auto endpoints = resolver.resolve(where.host, std::to_string(where.port), ec);
  if (ec) return Status::Unavailable("status endpoint " + address + ": " + ec.message());
  stream.expires_after(timeout);
  stream.connect(endpoints, ec);
  if (ec == beast::error::timeout) {
    return Status::DeadlineExceeded("status endpoint " + address + ": no connection within " +
                                    std::to_string(timeout.count()) + " ms");
  }
  if (ec) {
    return Status::Unavailable("status endpoint " + address + ": " + ec.message() +
                               " (has the cluster ended?)");
  }
  http::request<http::empty_body> req{http::verb::get, path, 11};
  req.set(http::field::host, address);
  req.set(http::field::user_agent, "sparktf");
  if (!use_token.empty()) req.set(http::field::authorization, "Bearer " + use_token);
  stream.expires_after(timeout);
  http::write(stream, req, ec);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  if (!ec) http::read(stream, buffer, parser, ec);
  if (ec == beast::error::timeout) {
    return Status::DeadlineExceeded("status endpoint " + address + ": no answer within " +
                                    std::to_string(timeout.count()) + " ms");
  }
  if (ec) return Status::Unavailable("status endpoint " + address + ": " + ec.message());
  beast::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  const auto& res = parser.get();
  if (res.result_int() == 401) {
    return Status::Unauthenticated(
        "status endpoint " + address +
        (use_token.empty() ? ": a token is needed (the URL the driver printed has it, "
                             "or pass --token)"
                           : ": the token was refused"));
  }
  if (res.result_int() != 200) {
    return Status::Unavailable("status endpoint " + address + ": HTTP " +
                               std::to_string(res.result_int()) + ": " + res.body());
  }
  return res.body();
}

}  // namespace sparktf::cluster
