// Internal: reading JSON that a peer sent. A missing key, a value of another type or a
// payload that is not an object all mean "use the default", never an exception
// (nlohmann's value() throws on a type mismatch, which on a server thread would end the
// process).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <type_traits>

namespace sparktf {

template <typename T>
T JsonGetOr(const nlohmann::json& j, const char* key, T otherwise) {
  if (!j.is_object()) return otherwise;
  const auto it = j.find(key);
  if (it == j.end()) return otherwise;
  if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->template get<bool>() : otherwise;
  } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
    return it->is_number_unsigned() ? it->template get<T>() : otherwise;
  } else if constexpr (std::is_integral_v<T>) {
    return it->is_number_integer() ? it->template get<T>() : otherwise;
  } else {
    static_assert(std::is_same_v<T, std::string>, "bool, integers or std::string");
    return it->is_string() ? it->template get<std::string>() : otherwise;
  }
}

inline std::string JsonGetOr(const nlohmann::json& j, const char* key, const char* otherwise) {
  return JsonGetOr<std::string>(j, key, std::string(otherwise));
}

}  // namespace sparktf
