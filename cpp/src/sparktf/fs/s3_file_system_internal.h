// Internal to fs/: s3:// (and s3a://) through object_store (remote_ffi/).
#pragma once

#include <map>
#include <memory>
#include <string>

#include "sparktf/fs/file_system.h"

namespace sparktf {

// `authority` is the bucket. Configuration: see S3ConfigFromEnvironment.
Result<std::shared_ptr<FileSystem>> MakeS3FileSystem(const std::string& authority);

// object_store configuration (AmazonS3ConfigKey names) from the places AWS tools read:
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else the profile
// (AWS_PROFILE, default "default") of AWS_SHARED_CREDENTIALS_FILE (~/.aws/credentials)
// and AWS_CONFIG_FILE (~/.aws/config); region from AWS_REGION, AWS_DEFAULT_REGION or the
// profile (default us-east-1); endpoint from AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL or the
// profile's endpoint_url (plain http allowed for an http:// endpoint); web identity and
// container credentials passed through. With no credentials and
// AWS_EC2_METADATA_DISABLED=true, requests go unsigned (public buckets).
// `env` maps variable names to values; `home` is $HOME.
std::map<std::string, std::string> S3ConfigFromEnvironment(
    const std::map<std::string, std::string>& env, const std::string& home);

}  // namespace sparktf
