#include "trace/traceparent.h"

#include <gtest/gtest.h>

namespace kf::trace {
namespace {

constexpr char kValid[] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

TEST(TraceparentTest, ParsesValidHeader) {
  auto sc = ParseTraceparent(kValid);
  ASSERT_TRUE(sc.has_value());
  EXPECT_EQ(sc->trace_id.ToHex(), "0af7651916cd43dd8448eb211c80319c");
  EXPECT_EQ(sc->span_id.ToHex(), "b7ad6b7169203331");
  EXPECT_EQ(sc->trace_flags, 0x01);
  EXPECT_TRUE(sc->IsSampled());
  EXPECT_TRUE(sc->remote);
  EXPECT_TRUE(sc->IsValid());
}

TEST(TraceparentTest, RoundTrips) {
  auto sc = ParseTraceparent(kValid);
  ASSERT_TRUE(sc.has_value());
  EXPECT_EQ(FormatTraceparent(*sc), kValid);
  auto unsampled = ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00");
  ASSERT_TRUE(unsampled.has_value());
  EXPECT_FALSE(unsampled->IsSampled());
  EXPECT_EQ(FormatTraceparent(*unsampled).substr(53), "00");
}

TEST(TraceparentTest, RejectsUppercase) {
  EXPECT_FALSE(ParseTraceparent("00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01"));
  EXPECT_FALSE(ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-B7AD6B7169203331-01"));
  EXPECT_FALSE(ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0A"));
}

TEST(TraceparentTest, RejectsWrongLength) {
  std::string s = kValid;
  EXPECT_FALSE(ParseTraceparent(s + "-"));
  EXPECT_FALSE(ParseTraceparent(s + "0"));
  EXPECT_FALSE(ParseTraceparent(s.substr(0, 54)));
  EXPECT_FALSE(ParseTraceparent(""));
  // Right total length, misplaced dash.
  EXPECT_FALSE(ParseTraceparent("00-0af7651916cd43dd8448eb211c80319cb-7ad6b7169203331-01"));
}

TEST(TraceparentTest, RejectsBadVersionAndZeroIds) {
  EXPECT_FALSE(ParseTraceparent("ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
  EXPECT_FALSE(ParseTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
  EXPECT_FALSE(ParseTraceparent("00-00000000000000000000000000000000-b7ad6b7169203331-01"));
  EXPECT_FALSE(ParseTraceparent("00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01"));
  EXPECT_FALSE(ParseTraceparent("00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01"));
}

TEST(SpanContextTest, HexHelpers) {
  EXPECT_FALSE(TraceId::FromHex("abc"));
  EXPECT_FALSE(SpanId::FromHex("11121314151617 8"));
  auto id = SpanId::FromHex("1112131415161718");
  ASSERT_TRUE(id);
  EXPECT_EQ(id->bytes[0], 0x11);
  EXPECT_EQ(id->bytes[7], 0x18);
  EXPECT_FALSE(TraceId{}.IsValid());
  EXPECT_FALSE(SpanContext{}.IsValid());
}

}  // namespace
}  // namespace kf::trace
