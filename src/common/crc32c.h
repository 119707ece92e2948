// CRC32C (Castagnoli), as used by every on-disk batch. Debian 12 ships no CRC32C library and
// abseil 20220623 has no absl/crc, so this is our own: slicing-by-8 in software, SSE4.2 when
// the CPU has it. Check value: Value("123456789") == 0xE3069283.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace kf::crc32c {

// Returns the crc32c of data[0..n-1] continuing from `init_crc` (the crc of earlier bytes).
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);

inline uint32_t Value(const char* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Extend(0, s.data(), s.size()); }

// A CRC stored next to the data it covers is masked, so that computing the CRC of a buffer
// that itself contains CRCs does not degenerate (LevelDB's trick).
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

}  // namespace kf::crc32c
