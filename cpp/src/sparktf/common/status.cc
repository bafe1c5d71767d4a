#include "sparktf/common/status.h"

#include <cerrno>
#include <cstring>

namespace sparktf {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kOutOfRange: return "OutOfRange";
    case StatusCode::kIOError: return "IOError";
    case StatusCode::kDeadlineExceeded: return "DeadlineExceeded";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kUnauthenticated: return "Unauthenticated";
    case StatusCode::kResourceExhausted: return "ResourceExhausted";
    case StatusCode::kAborted: return "Aborted";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kUnimplemented: return "Unimplemented";
    case StatusCode::kPermissionDenied: return "PermissionDenied";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
  }
  return "Unknown";
}

Status::Status(StatusCode code, std::string message) {
  if (code != StatusCode::kOk) {
    state_ = std::make_shared<const State>(State{code, std::move(message)});
  }
}

Status Status::FromErrno(std::string_view context, int err) {
  std::string msg(context);
  msg += ": ";
  msg += std::strerror(err);
  StatusCode code = StatusCode::kIOError;
  if (err == ENOENT) code = StatusCode::kNotFound;
  if (err == ETIMEDOUT) code = StatusCode::kDeadlineExceeded;
  if (err == ECONNREFUSED || err == EHOSTUNREACH) code = StatusCode::kUnavailable;
  if (err == EACCES || err == EPERM) code = StatusCode::kPermissionDenied;
  if (err == EEXIST) code = StatusCode::kAlreadyExists;
  return {code, std::move(msg)};
}

const std::string& Status::message() const {
  static const std::string kEmpty;
  return state_ ? state_->message : kEmpty;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += message();
  return {code(), std::move(msg)};
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string s(StatusCodeName(code()));
  s += ": ";
  s += message();
  return s;
}

}  // namespace sparktf
