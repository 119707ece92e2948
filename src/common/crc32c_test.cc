#include "common/crc32c.h"

#include <string>

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

TEST(Crc32c, MaskRoundTrips) {
  uint32_t c = Value("abc");
  EXPECT_NE(Mask(c), c);
  EXPECT_EQ(Unmask(Mask(c)), c);
}

}  // namespace
}  // namespace kf::crc32c
