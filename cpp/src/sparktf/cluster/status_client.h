// A client of the status endpoint (status_server.h): what `sparktf status URL` reads.
#pragma once

#include <chrono>
#include <string>

#include "sparktf/common/result.h"

namespace sparktf::cluster {

struct StatusUrl {
  std::string host;   // as in the URL, without brackets for IPv6
  int port = 80;
  std::string token;  // the URL's ?token=, or ""
};

// Parses "http://host:port[/...][?token=...]" (the URL the driver prints) or "host:port".
// InvalidArgument otherwise (https is not served).
Result<StatusUrl> ParseStatusUrl(const std::string& url);

// GET `path` ("/api/status") from the endpoint with the token (the URL's, unless `token`
// is given): the body of a 200 answer. Unauthenticated for 401, Unavailable when nothing
// answers (the cluster has ended?), DeadlineExceeded after `timeout`.
Result<std::string> FetchStatusPath(const std::string& url, const std::string& token,
                                    const std::string& path, std::chrono::milliseconds timeout);

}  // namespace sparktf::cluster
