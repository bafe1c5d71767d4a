// libFuzzer target: the status endpoint's input. The bytes are an HTTP request as a
// browser or an attacker sends it (parsed by Beast, then routed by RouteStatusRequest,
// which must never grant access without the token), a status URL (ParseStatusUrl) and a
// status document (FormatStatusTable).
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <string>

#include "sparktf/cluster/status_client.h"
#include "sparktf/cluster/status_server.h"
#include "sparktf/cluster/status_table.h"

using namespace sparktf;
namespace http = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  (void)cluster::ParseStatusUrl(input);
  (void)cluster::FormatStatusTable(input);

  http::request_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(16 * 1024);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(input), ec);
  if (ec || !parser.is_header_done()) return 0;
  const auto& req = parser.get();
  cluster::StatusRequest request{std::string(req.method_string()), std::string(req.target()),
                                 std::string(req[http::field::authorization]),
                                 std::string(req[http::field::cookie])};
  cluster::StatusServerOptions options;
  options.tokens = {"0123456789abcdef0123456789abcdef"};
  options.assets["/index.html"] = {"text/html", "<html></html>"};
  const cluster::StatusSource source{[] { return std::string("{\"nodes\": []}"); },
                                     [] { return std::string("{\"samples\": []}"); }};
  const auto reply = cluster::RouteStatusRequest(request, options, source);
  const bool has_token = input.find(options.tokens[0]) != std::string::npos;
  if (reply.status == 200 && !has_token) __builtin_trap();  // access without the token
  if (reply.status < 200 || reply.status > 599) __builtin_trap();
  return 0;
}
