// Internal, tests only: bytes written as hex (the pickles CPython wrote).
#pragma once

#include <string>
#include <string_view>

namespace sparktf::feed::testutil {

// "8005..." -> the bytes it spells, two hex digits a byte.
inline std::string FromHex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

}  // namespace sparktf::feed::testutil
