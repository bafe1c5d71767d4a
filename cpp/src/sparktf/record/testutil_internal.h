// Internal, tests only: building Features and hex bytes tersely.
#pragma once

#include <string>
#include <vector>

#include "sparktf/record/example.h"

namespace sparktf::testutil {

inline Feature Ints(std::vector<int64_t> v) {
  Feature f;
  f.kind = FeatureKind::kInt64;
  f.int64_list = std::move(v);
  return f;
}

inline Feature Floats(std::vector<float> v) {
  Feature f;
  f.kind = FeatureKind::kFloat;
  f.float_list = std::move(v);
  return f;
}

inline Feature Bytes(std::vector<std::string> v) {
  Feature f;
  f.kind = FeatureKind::kBytes;
  f.bytes_list = std::move(v);
  return f;
}

inline std::string Hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

inline std::string Unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out += static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16));
  }
  return out;
}

}  // namespace sparktf::testutil
