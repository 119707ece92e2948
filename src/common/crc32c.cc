#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace kf::crc32c {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli polynomial

struct Tables {
  std::array<std::array<uint32_t, 256>, 8> t{};
  constexpr Tables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ kPoly : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
    }
  }
};
constexpr Tables kTables;

uint32_t ExtendPortable(uint32_t crc, const unsigned char* p, size_t n) {
  const auto& t = kTables.t;
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);  // little-endian host assumed (x86_64, aarch64)
    std::memcpy(&hi, p + 4, 4);
    lo ^= crc;
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
          t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
// The crc32 instruction has a latency of 3 cycles and a throughput of 1 per cycle, so one
// dependent chain runs at a third of the instruction's speed. Long inputs are therefore cut
// into three equal blocks whose CRCs are computed interleaved and then combined: the CRC
// register of block A, followed by |B| more bytes, is A's register "shifted" by |B| zero bytes
// (a linear map over GF(2)) xor B's register from zero. The shift is four table lookups
// (Mark Adler's construction, as in his crc32c.c and in zlib's crc32_combine).
constexpr size_t kLongBlock = 8192;
constexpr size_t kShortBlock = 256;

// mat * vec over GF(2): mat is 32 columns, vec a 32-bit vector.
uint32_t Gf2Times(const uint32_t* mat, uint32_t vec) {
  uint32_t sum = 0;
  for (; vec != 0; vec >>= 1, ++mat) {
    if (vec & 1) sum ^= *mat;
  }
  return sum;
}

void Gf2Square(uint32_t* square, const uint32_t* mat) {
  for (int n = 0; n < 32; ++n) square[n] = Gf2Times(mat, mat[n]);
}

// The operator that appends `len` zero bytes to a raw CRC register (len a power of two).
void ZerosOperator(uint32_t* even, size_t len) {
  uint32_t odd[32];
  odd[0] = kPoly;  // one zero bit
  uint32_t row = 1;
  for (int n = 1; n < 32; ++n) {
    odd[n] = row;
    row <<= 1;
  }
  Gf2Square(even, odd);  // two zero bits
  Gf2Square(odd, even);  // four
  do {                   // eight, sixteen, ...: one byte, two bytes, ...
    Gf2Square(even, odd);
    len >>= 1;
    if (len == 0) return;
    Gf2Square(odd, even);
    len >>= 1;
  } while (len != 0);
  for (int n = 0; n < 32; ++n) even[n] = odd[n];
}

// The operator as four byte-indexed tables.
struct ShiftTable {
  std::array<std::array<uint32_t, 256>, 4> t;
  explicit ShiftTable(size_t len) {
    uint32_t op[32];
    ZerosOperator(op, len);
    for (uint32_t n = 0; n < 256; ++n) {
      for (int b = 0; b < 4; ++b) t[b][n] = Gf2Times(op, n << (8 * b));
    }
  }
  uint32_t Shift(uint32_t crc) const {
    return t[0][crc & 0xff] ^ t[1][(crc >> 8) & 0xff] ^ t[2][(crc >> 16) & 0xff] ^ t[3][crc >> 24];
  }
};

__attribute__((target("sse4.2"))) uint64_t Crc64(uint64_t c, const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return _mm_crc32_u64(c, v);
}

// Three interleaved chains over blocks of `block` bytes while at least 3 blocks remain.
__attribute__((target("sse4.2"))) uint64_t ExtendInterleaved(uint64_t c0, const unsigned char*& p,
                                                             size_t& n, size_t block,
                                                             const ShiftTable& shift) {
  while (n >= 3 * block) {
    uint64_t c1 = 0, c2 = 0;
    for (const unsigned char* end = p + block; p < end; p += 8) {
      c0 = Crc64(c0, p);
      c1 = Crc64(c1, p + block);
      c2 = Crc64(c2, p + 2 * block);
    }
    c0 = shift.Shift(static_cast<uint32_t>(c0)) ^ c1;
    c0 = shift.Shift(static_cast<uint32_t>(c0)) ^ c2;
    p += 2 * block;
    n -= 3 * block;
  }
  return c0;
}

__attribute__((target("sse4.2"))) uint32_t ExtendSse42(uint32_t crc, const unsigned char* p,
                                                       size_t n) {
  uint64_t c = crc;
  if (n >= 3 * kShortBlock) {
    static const ShiftTable* const long_shift = new ShiftTable(kLongBlock);
    static const ShiftTable* const short_shift = new ShiftTable(kShortBlock);
    c = ExtendInterleaved(c, p, n, kLongBlock, *long_shift);
    c = ExtendInterleaved(c, p, n, kShortBlock, *short_shift);
  }
  while (n >= 8) {
    c = Crc64(c, p);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}
bool HasSse42() { return __builtin_cpu_supports("sse4.2"); }
#endif

}  // namespace

uint32_t Extend(uint32_t init_crc, const char* data, size_t n) {
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  uint32_t crc = ~init_crc;
#if defined(__x86_64__)
  static const bool sse = HasSse42();
  crc = sse ? ExtendSse42(crc, p, n) : ExtendPortable(crc, p, n);
#else
  crc = ExtendPortable(crc, p, n);
#endif
  return ~crc;
}

}  // namespace kf::crc32c
