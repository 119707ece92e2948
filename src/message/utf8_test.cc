#include "message/utf8.h"

#include <cstdint>
#include <random>
#include <string>

#include "gtest/gtest.h"

namespace kf {
namespace {

// An independent formulation, one code point at a time: decode it, then reject overlong forms,
// surrogates and values above U+10FFFF by value. IsValidUtf8 (byte bounds, eight ASCII bytes at
// a time) must agree with it.
bool ReferenceIsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80         ? 1
                       : c >> 5 == 0x6  ? 2
                       : c >> 4 == 0xE  ? 3
                       : c >> 3 == 0x1E ? 4
                                        : 0;
    if (len == 0 || s.size() - i < len) return false;
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b >> 6 != 0x2) return false;
      cp = cp << 6 | (b & 0x3F);
    }
    static constexpr uint32_t kMinOfLength[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMinOfLength[len] || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return false;
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
  const std::string pieces[] = {"a",
                                "0123456789abcdef",
                                "\xC3\xA9",
                                "\xE2\x82\xAC",
                                "\xF0\x9F\x98\x80",
                                "\x80",
                                "\xC3",
                                "\xED\xA0\x80",
                                "\xF4\x90\x80\x80",
                                "\xFF",
                                "\xE0\x80\x80",
                                "\xC0\x80",
                                "\xE0\x9F\xBF",
                                "\xF0\x8F\xBF\xBF",
                                "\xED\xBF\xBF",
                                "\xF4\x8F\xBF\xBF"};
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
