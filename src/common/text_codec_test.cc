#include "common/text_codec.h"

#include <string>

#include "gtest/gtest.h"

namespace kf {
namespace {

TEST(Base64, Rfc4648Vectors) {
  EXPECT_EQ(Base64Encode(""), "");
  EXPECT_EQ(Base64Encode("f"), "Zg==");
  EXPECT_EQ(Base64Encode("fo"), "Zm8=");
  EXPECT_EQ(Base64Encode("foo"), "Zm9v");
  EXPECT_EQ(Base64Encode("foobar"), "Zm9vYmFy");
  EXPECT_EQ(*Base64Decode("Zm9vYg=="), "foob");
}

TEST(Base64, RoundTripsAllBytes) {
  std::string all;
  for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
  for (size_t n = 0; n <= all.size(); n += 7) {
    auto s = all.substr(0, n);
    EXPECT_EQ(*Base64Decode(Base64Encode(s)), s);
  }
}

TEST(Base64, RejectsMalformed) {
  for (const char* bad : {"!!!not-base64!!!", "Zg=", "Zg", "Z===", "Zm=v", "Zh==", "Zm9v\n"}) {
    EXPECT_FALSE(Base64Decode(bad).has_value()) << bad;
  }
}

TEST(Base36, RoundTripsAndRejects) {
  for (uint64_t v : {uint64_t{0}, uint64_t{35}, uint64_t{36}, uint64_t{1} << 62, UINT64_MAX}) {
    EXPECT_EQ(*Base36Decode(Base36Encode(v)), v);
  }
  EXPECT_EQ(Base36Encode(35), "z");
  EXPECT_EQ(Base36Encode(36), "10");
  EXPECT_EQ(Base36Encode(UINT64_MAX), "3w5e11264sgsf");
  for (const char* bad : {"", "01", "A", "-1", "3w5e11264sgsg", "zzzzzzzzzzzzzz"}) {
    EXPECT_FALSE(Base36Decode(bad).has_value()) << bad;
  }
}

// The allocation-free writers behind the hot-path setters produce exactly the same text.
TEST(Base36, EncodeToMatchesEncodeAndFitsTheBound) {
  EXPECT_EQ(Base36Encode(0), "0");
  uint64_t v = 1;
  for (int i = 0; i < 2000; ++i, v = v * 6364136223846793005ULL + 1442695040888963407ULL) {
    for (uint64_t x : {v, v >> (i % 64), uint64_t(i)}) {
      char buf[kMaxBase36Chars];
      const size_t n = Base36EncodeTo(x, buf);
      ASSERT_LE(n, kMaxBase36Chars);
      EXPECT_EQ(std::string(buf, n), Base36Encode(x));
      EXPECT_EQ(*Base36Decode(std::string_view(buf, n)), x);
    }
  }
}

TEST(Base64, EncodeToMatchesEncodeForEveryLength) {
  std::string in;
  for (int len = 0; len < 64; ++len) {
    std::string out(Base64EncodedSize(in.size()) + 1, '#');
    const size_t n = Base64EncodeTo(in, out.data());
    EXPECT_EQ(n, Base64EncodedSize(in.size()));
    EXPECT_EQ(out[n], '#') << "wrote past the bound";
    EXPECT_EQ(out.substr(0, n), Base64Encode(in));
    EXPECT_EQ(*Base64Decode(out.substr(0, n)), in);
    in.push_back(static_cast<char>(len * 37 + 11));
  }
}

}  // namespace
}  // namespace kf
