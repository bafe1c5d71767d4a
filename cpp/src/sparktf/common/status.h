// Status: the error type of the sparktf core.
//
// Every fallible operation returns a [[nodiscard]] Status or Result<T>. A Status
// is cheap to copy when OK (no allocation) and carries a code plus a message
// otherwise. Codes map one-to-one onto the typed Python exceptions in
// sparktf.errors, so choose them by what the caller should do:
//   kInvalidArgument  the caller passed something malformed (fix the input)
//   kNotFound         a named thing (file, feature) does not exist
//   kDataLoss         stored data is corrupt or truncated (the file is bad)
//   kOutOfRange       a clean end of a stream; never an error for readers' callers
//   kIOError          the operating system refused an operation
//   kDeadlineExceeded a wait ran out of time
//   kUnavailable      a peer is not reachable (yet)
//   kUnauthenticated  a peer did not present the right credentials
//   kResourceExhausted a limit was hit (queue full, frame too big)
//   kAborted / kCancelled  the operation was stopped on purpose
//   kInternal         a bug in sparktf
//   kUnimplemented    valid input that this path does not handle (use another)
//   kPermissionDenied the store refused the caller (fix permissions or the user)
//   kAlreadyExists    the target exists and the operation would not replace it
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace sparktf {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 1,
  kNotFound = 2,
  kDataLoss = 3,
  kOutOfRange = 4,
  kIOError = 5,
  kDeadlineExceeded = 6,
  kUnavailable = 7,
  kUnauthenticated = 8,
  kResourceExhausted = 9,
  kAborted = 10,
  kCancelled = 11,
  kInternal = 12,
  kUnimplemented = 13,
  kPermissionDenied = 14,
  kAlreadyExists = 15,
  kLastCode = kAlreadyExists,
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message);

  static Status OK() { return {}; }
  static Status InvalidArgument(std::string msg) {
    return {StatusCode::kInvalidArgument, std::move(msg)};
  }
  static Status NotFound(std::string msg) {
    return {StatusCode::kNotFound, std::move(msg)};
  }
  static Status DataLoss(std::string msg) {
    return {StatusCode::kDataLoss, std::move(msg)};
  }
  static Status OutOfRange(std::string msg) {
    return {StatusCode::kOutOfRange, std::move(msg)};
  }
  static Status IOError(std::string msg) {
    return {StatusCode::kIOError, std::move(msg)};
  }
  static Status DeadlineExceeded(std::string msg) {
    return {StatusCode::kDeadlineExceeded, std::move(msg)};
  }
  static Status Unavailable(std::string msg) {
    return {StatusCode::kUnavailable, std::move(msg)};
  }
  static Status Unauthenticated(std::string msg) {
    return {StatusCode::kUnauthenticated, std::move(msg)};
  }
  static Status ResourceExhausted(std::string msg) {
    return {StatusCode::kResourceExhausted, std::move(msg)};
  }
  static Status Aborted(std::string msg) {
    return {StatusCode::kAborted, std::move(msg)};
  }
  static Status Cancelled(std::string msg) {
    return {StatusCode::kCancelled, std::move(msg)};
  }
  static Status Internal(std::string msg) {
    return {StatusCode::kInternal, std::move(msg)};
  }
  static Status Unimplemented(std::string msg) {
    return {StatusCode::kUnimplemented, std::move(msg)};
  }
  static Status PermissionDenied(std::string msg) {
    return {StatusCode::kPermissionDenied, std::move(msg)};
  }
  static Status AlreadyExists(std::string msg) {
    return {StatusCode::kAlreadyExists, std::move(msg)};
  }
  // An IOError built from errno, e.g. FromErrno("open /x", ENOENT) ->
  // "open /x: No such file or directory" (kNotFound for ENOENT, kPermissionDenied for
  // EACCES/EPERM, kAlreadyExists for EEXIST).
  static Status FromErrno(std::string_view context, int err);

  bool ok() const { return state_ == nullptr; }
  StatusCode code() const { return state_ ? state_->code : StatusCode::kOk; }
  const std::string& message() const;
  bool IsOutOfRange() const { return code() == StatusCode::kOutOfRange; }
  bool IsDataLoss() const { return code() == StatusCode::kDataLoss; }

  // Returns a status with the same code and "context: message", so that errors
  // read as a chain of causes ("read shard-0: open: No such file").
  Status WithContext(std::string_view context) const;
  // "DataLoss: message" (or "OK").
  std::string ToString() const;

 private:
  struct State {
    StatusCode code;
    std::string message;
  };
  std::shared_ptr<const State> state_;
};

}  // namespace sparktf

#define SPARKTF_CONCAT_IMPL(a, b) a##b
#define SPARKTF_CONCAT(a, b) SPARKTF_CONCAT_IMPL(a, b)

// Returns from the enclosing function if `expr` (a Status) is not OK.
#define RETURN_NOT_OK(expr)         \
  do {                              \
    ::sparktf::Status _st = (expr); \
    if (!_st.ok()) return _st;      \
  } while (false)
