// CRC32C (Castagnoli), as TFRecord framing uses it.
//
// Extend() picks the SSE4.2 instruction when the CPU has it and a
// slicing-by-8 table otherwise; both are exposed so tests can check one against
// the other. All functions are pure and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace sparktf::crc32c {

// CRC of data[0..n) continuing from `crc` (0 to start).
uint32_t Extend(uint32_t crc, const char* data, size_t n);
uint32_t ExtendPortable(uint32_t crc, const char* data, size_t n);
// Returns false (and must not be called) when the CPU lacks SSE4.2.
bool HardwareAvailable();
uint32_t ExtendHardware(uint32_t crc, const char* data, size_t n);

inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }

// TFRecord stores masked CRCs so that a CRC of data that itself holds CRCs
// does not degenerate.
constexpr uint32_t kMaskDelta = 0xa282ead8u;
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace sparktf::crc32c
