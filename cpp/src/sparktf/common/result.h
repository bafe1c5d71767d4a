// Result<T>: a value or the Status that explains why there is none.
#pragma once

#include <cassert>
#include <utility>
#include <variant>

#include "sparktf/common/status.h"

namespace sparktf {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  Result(Status status) : v_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(v_).ok() && "Result built from an OK status");
  }

  bool ok() const { return std::holds_alternative<T>(v_); }
  Status status() const { return ok() ? Status::OK() : std::get<Status>(v_); }

  // Preconditions: ok().
  T& ValueOrDie() & { return std::get<T>(v_); }
  const T& ValueOrDie() const& { return std::get<T>(v_); }
  T&& ValueOrDie() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  const T* operator->() const { return &std::get<T>(v_); }
  T& operator*() & { return std::get<T>(v_); }
  const T& operator*() const& { return std::get<T>(v_); }
  T&& operator*() && { return std::get<T>(std::move(v_)); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace sparktf

#define SPARKTF_ASSIGN_OR_RETURN_IMPL(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                  \
  if (!tmp.ok()) return tmp.status();                  \
  lhs = std::move(tmp).ValueOrDie()

// `ASSIGN_OR_RETURN(auto x, MakeX())` binds x or returns MakeX()'s error.
#define ASSIGN_OR_RETURN(lhs, rexpr) \
  SPARKTF_ASSIGN_OR_RETURN_IMPL(SPARKTF_CONCAT(_result_, __LINE__), lhs, rexpr)
