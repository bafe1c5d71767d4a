// sparktf's status codes as TensorFlow's (for the libraries TensorFlow loads: the
// filesystem plugin and the feed op). Needs only TensorFlow's C headers.
#pragma once

#include "sparktf/common/status.h"
#include "tensorflow/c/tf_status.h"

namespace sparktf {

inline TF_Code ToTfCode(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return TF_OK;
    case StatusCode::kInvalidArgument: return TF_INVALID_ARGUMENT;
    case StatusCode::kNotFound: return TF_NOT_FOUND;
    case StatusCode::kDataLoss: return TF_DATA_LOSS;
    case StatusCode::kOutOfRange: return TF_OUT_OF_RANGE;
    case StatusCode::kIOError: return TF_UNKNOWN;
    case StatusCode::kDeadlineExceeded: return TF_DEADLINE_EXCEEDED;
    case StatusCode::kUnavailable: return TF_UNAVAILABLE;
    case StatusCode::kUnauthenticated: return TF_UNAUTHENTICATED;
    case StatusCode::kResourceExhausted: return TF_RESOURCE_EXHAUSTED;
    case StatusCode::kAborted: return TF_ABORTED;
    case StatusCode::kCancelled: return TF_CANCELLED;
    case StatusCode::kInternal: return TF_INTERNAL;
    case StatusCode::kUnimplemented: return TF_UNIMPLEMENTED;
    case StatusCode::kPermissionDenied: return TF_PERMISSION_DENIED;
    case StatusCode::kAlreadyExists: return TF_ALREADY_EXISTS;
  }
  return TF_UNKNOWN;
}

}  // namespace sparktf
