// Internal: protobuf wire-format primitives for the Example codec.
// Every reader checks bounds before it touches a byte and never trusts a
// declared length beyond what remains.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "sparktf/common/status.h"

namespace sparktf::wire {

enum WireType : uint32_t {
  kVarint = 0,
  kFixed64 = 1,
  kLen = 2,
  kStartGroup = 3,
  kEndGroup = 4,
  kFixed32 = 5
};

inline uint32_t MakeTag(uint32_t field, WireType type) { return (field << 3) | type; }

inline void PutVarint(uint64_t v, std::string* out) {
  char buf[10];
  size_t n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out->append(buf, n);
}

inline size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// A cursor over one message's bytes.
class Reader {
 public:
  explicit Reader(std::string_view data)
      : p_(data.data()), end_(data.data() + data.size()) {}

  bool done() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }

  bool ReadVarint(uint64_t* v) {
    uint64_t result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      const auto byte = static_cast<uint8_t>(*p_++);
      result |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (byte < 0x80) {
        *v = result;
        return true;
      }
    }
    return false;  // more than 10 bytes
  }
  bool ReadFixed32(uint32_t* v) {
    if (remaining() < 4) return false;
    std::memcpy(v, p_, 4);
    p_ += 4;
    return true;
  }
  bool ReadLengthDelimited(std::string_view* v) {
    uint64_t len;
    if (!ReadVarint(&len) || len > remaining()) return false;
    *v = std::string_view(p_, static_cast<size_t>(len));
    p_ += len;
    return true;
  }
  // Reads a tag; field numbers of 0 or above 2^29-1 are malformed.
  bool ReadTag(uint32_t* field, WireType* type) {
    uint64_t tag;
    if (!ReadVarint(&tag) || tag > 0xffffffffu) return false;
    *field = static_cast<uint32_t>(tag >> 3);
    *type = static_cast<WireType>(tag & 7);
    return *field != 0;
  }
  // Skips a field's value. Groups (deprecated, never in Example) are malformed.
  bool Skip(WireType type) {
    uint64_t v;
    std::string_view s;
    switch (type) {
      case kVarint: return ReadVarint(&v);
      case kFixed64:
        if (remaining() < 8) return false;
        p_ += 8;
        return true;
      case kLen: return ReadLengthDelimited(&s);
      case kFixed32:
        if (remaining() < 4) return false;
        p_ += 4;
        return true;
      default: return false;
    }
  }

 private:
  const char* p_;
  const char* end_;
};

}  // namespace sparktf::wire
