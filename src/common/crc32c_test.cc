#include "common/crc32c.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kf::crc32c {
namespace {

TEST(Crc32c, CheckValue) { EXPECT_EQ(Value("123456789"), 0xE3069283u); }

TEST(Crc32c, KnownVectors) {
  // RFC 3720 B.4: 32 bytes of zeros and of 0xff.
  std::string zeros(32, '\0'), ones(32, '\xff');
  EXPECT_EQ(Value(zeros), 0x8a9136aau);
  EXPECT_EQ(Value(ones), 0x62a8ab43u);
  EXPECT_EQ(Value(""), 0u);
}

TEST(Crc32c, ExtendEqualsWhole) {
  std::string s = "hello world, this is a longer string to cross the 8-byte stride";
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(Extend(Value(s.data(), cut), s.data() + cut, s.size() - cut), Value(s));
  }
}

// Bit-at-a-time reference (no tables, no instructions to get wrong).
uint32_t Reference(const std::string& s) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char c : s) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc & 1) ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
  }
  return ~crc;
}

// Long inputs take the three-way interleaved path (blocks of 8192 and 256 bytes): every length
// around its block boundaries, at every alignment, and split anywhere, must match.
TEST(Crc32c, InterleavedPathMatchesReference) {
  std::string data(3 * 8192 * 2 + 3 * 256 * 2 + 64, '\0');
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto& c : data) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    c = static_cast<char>(x >> 56);
  }
  std::vector<size_t> lengths;
  for (size_t base : std::vector<size_t>{0, 3 * 256, 3 * 8192, 3 * 8192 + 3 * 256, 2 * 3 * 8192}) {
    for (size_t d = 0; d < 24; ++d) {
      lengths.push_back(base + d);
      if (base >= d) lengths.push_back(base - d);
    }
  }
  for (size_t len : lengths) {
    for (size_t offset : std::vector<size_t>{0, 1, 3, 7}) {
      if (offset + len > data.size()) continue;
      const std::string s = data.substr(offset, len);
      ASSERT_EQ(Value(s), Reference(s)) << "len " << len << " offset " << offset;
      const size_t cut = len / 3 + offset;
      if (cut <= len) {
        EXPECT_EQ(Extend(Value(s.data(), cut), s.data() + cut, len - cut), Reference(s)) << len;
      }
    }
  }
}

TEST(Crc32c, MaskRoundTrips) {
  uint32_t c = Value("abc");
  EXPECT_NE(Mask(c), c);
  EXPECT_EQ(Unmask(Mask(c)), c);
}

}  // namespace
}  // namespace kf::crc32c
