#include "message/message_id.h"

#include <gtest/gtest.h>

#include <string>

namespace kf {
namespace {

TEST(MessageIdTest, BytesRoundTrip) {
  for (const MessageId& id :
       {MessageId::Local(0), MessageId::Local(42), MessageId::Local(UINT64_MAX),
        MessageId(WalKind::kObjectStore, 3, 17), MessageId(WalKind::kQuorum, UINT64_MAX, 0)}) {
    auto back = MessageId::Decode(id.Encode());
    ASSERT_TRUE(back.ok()) << id << ": " << back.status();
    EXPECT_EQ(*back, id);
  }
}

TEST(MessageIdTest, TextRoundTrip) {
  for (const MessageId& id :
       {MessageId::Local(0), MessageId::Local(42), MessageId(WalKind::kObjectStore, 3, 17),
        MessageId(WalKind::kQuorum, 0, UINT64_MAX)}) {
    auto back = MessageId::FromText(id.ToText());
    ASSERT_TRUE(back.ok()) << id << ": " << back.status();
    EXPECT_EQ(*back, id);
  }
  EXPECT_EQ(MessageId::Local(42).ToText(), "local:42");
  EXPECT_EQ(MessageId(WalKind::kObjectStore, 3, 17).ToText(), "os:3.17");
  EXPECT_EQ(MessageId(WalKind::kQuorum, 3, 17).ToText(), "q:3.17");
}

TEST(MessageIdTest, OrderIsSegmentThenEntry) {
  EXPECT_LT(MessageId::Local(1), MessageId::Local(2));
  EXPECT_LT(MessageId(WalKind::kObjectStore, 1, 99), MessageId(WalKind::kObjectStore, 2, 0));
  EXPECT_LT(MessageId(), MessageId::Local(0));
}

TEST(MessageIdTest, DecodeRejectsGarbage) {
  const std::string local = MessageId::Local(5).Encode();
  for (const std::string& bad : {
           std::string(),                                  // empty
           std::string("\x00\x00\x00", 3),                 // invalid kind
           std::string("\x09\x00\x00", 3),                 // unknown kind
           std::string("\x01\x00", 2),                     // truncated
           local + "x",                                    // trailing garbage
           std::string("\x01\x01\x05", 3),                 // local id with a segment
           std::string("\x02\x80", 2),                     // truncated varint
           std::string("\x02") + std::string(11, '\xff'),  // varint longer than 10 bytes
       }) {
    auto r = MessageId::Decode(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << testing::PrintToString(bad);
  }
}

TEST(MessageIdTest, FromTextRejectsGarbage) {
  for (const char* bad : {"", "42", "local:", "local:-1", "local:+1", "local:01", "local:1.2",
                          "os:3", "os:3.", "os:.3", "os:03.1", "q:1.2.3", "x:1", "local:1 ",
                          " local:1", "local:18446744073709551616", "LOCAL:1", "invalid"}) {
    auto r = MessageId::FromText(bad);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

}  // namespace
}  // namespace kf
