#include "message/utf8.h"

#include <random>
#include <string>

#include "gtest/gtest.h"

namespace kf {
namespace {

// Table 3-7 of the Unicode standard, one byte at a time: what IsValidUtf8's word-at-a-time
// ASCII path must agree with.
bool ReferenceIsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
      len = 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;
      if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;
      if (c == 0xF4) hi = 0x8F;
    } else {
      return false;
    }
    if (s.size() - i < len) return false;
    for (size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (k == 1 ? (b < lo || b > hi) : (b & 0xC0) != 0x80) return false;
    }
    i += len;
  }
  return true;
}

TEST(IsValidUtf8, KnownGoodAndBad) {
  for (const char* good : {"", "_tc", "plain ascii longer than eight bytes", "h\xC3\xA9llo",
                           "\xE2\x82\xAC", "\xF0\x9F\x98\x80 after an emoji, more ascii"}) {
    EXPECT_TRUE(IsValidUtf8(good)) << good;
  }
  for (const char* bad : {"\x80", "abcdefgh\xC3", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80",
                          "12345678901234\xFF"}) {
    EXPECT_FALSE(IsValidUtf8(bad)) << bad;
  }
  // Every position of an eight-byte word, behind an ASCII run of every length.
  for (size_t run = 0; run < 24; ++run) {
    const std::string ascii(run, 'x');
    EXPECT_FALSE(IsValidUtf8(ascii + "\xFF" + "tail")) << run;
    EXPECT_FALSE(IsValidUtf8(ascii + "\xC3")) << run;
    EXPECT_TRUE(IsValidUtf8(ascii + "\xC3\xA9" + ascii)) << run;
  }
}

TEST(IsValidUtf8, AgreesWithTheByteAtATimeReference) {
  std::mt19937_64 rng(5);
  const std::string pieces[] = {
      "a",    "0123456789abcdef", "\xC3\xA9",         "\xE2\x82\xAC", "\xF0\x9F\x98\x80", "\x80",
      "\xC3", "\xED\xA0\x80",     "\xF4\x90\x80\x80", "\xFF",         "\xE0\x80\x80"};
  int valid = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const int n = static_cast<int>(rng() % 12);
    for (int k = 0; k < n; ++k) s += pieces[rng() % std::size(pieces)];
    ASSERT_EQ(IsValidUtf8(s), ReferenceIsValidUtf8(s)) << testing::PrintToString(s);
    valid += IsValidUtf8(s);
  }
  EXPECT_GT(valid, 1000);
}

}  // namespace
}  // namespace kf
