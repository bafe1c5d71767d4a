// Where S3 settings come from, in the order the AWS CLI and SDKs use (see
// S3ConfigFromEnvironment in s3_file_system_internal.h).

#include <fstream>

#include "sparktf/fs/s3_file_system_internal.h"

namespace sparktf {
namespace {

std::string Trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  const auto last = s.find_last_not_of(" \t\r");
  return s.substr(first, last - first + 1);
}

// key -> value of section `section` of an AWS INI file; empty when absent.
std::map<std::string, std::string> ReadIniSection(const std::string& path,
                                                  const std::string& section) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    line = Trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[' && line.back() == ']') {
      inside = Trim(line.substr(1, line.size() - 2)) == section;
      continue;
    }
    const auto eq = line.find('=');
    if (inside && eq != std::string::npos) {
      out[Trim(line.substr(0, eq))] = Trim(line.substr(eq + 1));
    }
  }
  return out;
}

}  // namespace

std::map<std::string, std::string> S3ConfigFromEnvironment(
    const std::map<std::string, std::string>& env, const std::string& home) {
  auto get = [&](const std::string& k) -> std::string {
    auto it = env.find(k);
    return it == env.end() ? "" : it->second;
  };
  const std::string profile = get("AWS_PROFILE").empty() ? "default" : get("AWS_PROFILE");
  std::string credentials_file = get("AWS_SHARED_CREDENTIALS_FILE");
  std::string config_file = get("AWS_CONFIG_FILE");
  if (credentials_file.empty() && !home.empty()) credentials_file = home + "/.aws/credentials";
  if (config_file.empty() && !home.empty()) config_file = home + "/.aws/config";
  auto creds = ReadIniSection(credentials_file, profile);
  auto conf = ReadIniSection(config_file, profile == "default" ? "default" : "profile " + profile);
  auto from_profile = [&](const std::string& k) -> std::string {
    if (auto it = creds.find(k); it != creds.end()) return it->second;
    if (auto it = conf.find(k); it != conf.end()) return it->second;
    return "";
  };

  std::map<std::string, std::string> out;
  if (!get("AWS_ACCESS_KEY_ID").empty()) {
    out["aws_access_key_id"] = get("AWS_ACCESS_KEY_ID");
    out["aws_secret_access_key"] = get("AWS_SECRET_ACCESS_KEY");
    if (!get("AWS_SESSION_TOKEN").empty()) out["aws_session_token"] = get("AWS_SESSION_TOKEN");
  } else if (!from_profile("aws_access_key_id").empty()) {
    out["aws_access_key_id"] = from_profile("aws_access_key_id");
    out["aws_secret_access_key"] = from_profile("aws_secret_access_key");
    if (!from_profile("aws_session_token").empty()) {
      out["aws_session_token"] = from_profile("aws_session_token");
    }
  }

  std::string region = get("AWS_REGION");
  if (region.empty()) region = get("AWS_DEFAULT_REGION");
  if (region.empty()) region = from_profile("region");
  out["aws_region"] = region.empty() ? "us-east-1" : region;

  std::string endpoint = get("AWS_ENDPOINT_URL_S3");
  if (endpoint.empty()) endpoint = get("AWS_ENDPOINT_URL");
  if (endpoint.empty()) endpoint = from_profile("endpoint_url");
  if (!endpoint.empty()) {
    out["aws_endpoint"] = endpoint;
    if (endpoint.starts_with("http://")) out["aws_allow_http"] = "true";
  }
  if (get("AWS_S3_ADDRESSING_STYLE") == "virtual") {
    out["aws_virtual_hosted_style_request"] = "true";
  }

  // Federated and container credentials: object_store fetches these itself.
  for (const auto& [var, key] : std::map<std::string, std::string>{
           {"AWS_WEB_IDENTITY_TOKEN_FILE", "aws_web_identity_token_file"},
           {"AWS_ROLE_ARN", "aws_role_arn"},
           {"AWS_ROLE_SESSION_NAME", "aws_role_session_name"},
           {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
            "aws_container_credentials_relative_uri"},
           {"AWS_CONTAINER_CREDENTIALS_FULL_URI", "aws_container_credentials_full_uri"},
       }) {
    if (!get(var).empty()) out[key] = get(var);
  }
  const bool has_credentials = out.count("aws_access_key_id") ||
                               out.count("aws_web_identity_token_file") ||
                               out.count("aws_container_credentials_relative_uri") ||
                               out.count("aws_container_credentials_full_uri");
  if (!has_credentials && get("AWS_EC2_METADATA_DISABLED") == "true") {
    out["aws_skip_signature"] = "true";
  }
  return out;
}

}  // namespace sparktf
