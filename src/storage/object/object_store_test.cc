// The argument rules every ObjectStore shares: keys, prefixes, ranges.
#include "storage/object/object_store.h"

#include "gtest/gtest.h"

namespace kf::object {
namespace {

TEST(ValidateKeyTest, AcceptsTheCharset) {
  EXPECT_TRUE(ValidateKey("a").ok());
  EXPECT_TRUE(ValidateKey("wal/pchannel-1/seg_00000001/block.0001").ok());
  EXPECT_TRUE(ValidateKey("...a/b..c/-_.").ok()) << "dots inside a segment are fine";
  std::string longest;
  while (longest.size() + kMaxSegmentBytes + 1 <= kMaxKeyBytes) {
    longest += std::string(kMaxSegmentBytes, 'k') + "/";
  }
  longest += std::string(kMaxKeyBytes - longest.size(), 'k');
  EXPECT_TRUE(ValidateKey(longest).ok());
}

TEST(ValidateKeyTest, RejectsEverythingElse) {
  for (const std::string& key :
       {std::string(""), std::string("/a"), std::string("a/"), std::string("a//b"),
        std::string("."), std::string("a/./b"), std::string("a/.."), std::string("a b"),
        std::string("a~"), std::string("a%2F"), std::string("a+b"), std::string("a\nb"),
        std::string("a\0b", 3), std::string(kMaxSegmentBytes + 1, 's'),
        std::string(kMaxKeyBytes + 1, 'k')}) {
    EXPECT_TRUE(absl::IsInvalidArgument(ValidateKey(key))) << key;
  }
}

TEST(ValidatePrefixTest, AllowsEmptyAndTrailingSlash) {
  EXPECT_TRUE(ValidatePrefix("").ok());
  EXPECT_TRUE(ValidatePrefix("wal/").ok());
  EXPECT_TRUE(ValidatePrefix("wal/seg").ok());
  EXPECT_TRUE(absl::IsInvalidArgument(ValidatePrefix("/")));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidatePrefix("wal//")));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidatePrefix("../x")));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateList("wal/", "", 0)));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateList("wal/", "a?", 1)));
}

TEST(ResolveRangeTest, CutsAtTheEndAndRejectsNoOverlap) {
  uint64_t b = 0, e = 0;
  ASSERT_TRUE(ResolveRange(ByteRange::Span(3, 4), 10, &b, &e).ok());
  EXPECT_EQ(b, 3u);
  EXPECT_EQ(e, 7u);
  ASSERT_TRUE(ResolveRange(ByteRange::Span(8, ByteRange::kToEnd - 1), 10, &b, &e).ok());
  EXPECT_EQ(e, 10u) << "no overflow";
  ASSERT_TRUE(ResolveRange(ByteRange::From(0), 10, &b, &e).ok());
  EXPECT_EQ(e - b, 10u);
  ASSERT_TRUE(ResolveRange(ByteRange::Suffix(3), 10, &b, &e).ok());
  EXPECT_EQ(b, 7u);
  ASSERT_TRUE(ResolveRange(ByteRange::Suffix(30), 10, &b, &e).ok());
  EXPECT_EQ(b, 0u);
  ASSERT_TRUE(ResolveRange(ByteRange::All(), 0, &b, &e).ok());
  EXPECT_EQ(e, 0u);
  EXPECT_TRUE(absl::IsOutOfRange(ResolveRange(ByteRange::Span(10, 1), 10, &b, &e)));
  EXPECT_TRUE(absl::IsOutOfRange(ResolveRange(ByteRange::Suffix(1), 0, &b, &e)));
  EXPECT_TRUE(absl::IsInvalidArgument(ValidateRange(ByteRange::Span(0, 0))));
  EXPECT_TRUE(ValidateRange(ByteRange::All()).ok());
}

}  // namespace
}  // namespace kf::object
