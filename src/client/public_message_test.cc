// The public message helpers (include/kingfisher/message.h) and ToMutableMessage.
#include "client/public_message.h"

#include "common/errors.h"
#include "gtest/gtest.h"
#include "kingfisher/types.h"
#include "message/payload.h"

namespace kf::client {
namespace {

kingfisher::Rows TwoRows() {
  return kingfisher::Rows{.collection_id = 7,
                          .partition = "p1",
                          .dim = 2,
                          .pks = {10, 11},
                          .vectors = {1, 2, 3, 4},
                          .attributes = {"{\"a\":1}", "{}"}};
}

TEST(PublicMessageTest, InsertRowsRoundTripThroughAConsumedMessage) {
  auto m = kingfisher::InsertMessage("kf-dml_0_7v0", TwoRows());
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->type, MessageType::kInsert);
  EXPECT_EQ(m->vchannel, "kf-dml_0_7v0");
  // The payload is the wire's InsertBatch, as the WAL checks it.
  ASSERT_TRUE(DecodeInsertBatch(m->payload).ok());

  kingfisher::ConsumedMessage consumed{.type = MessageType::kInsert, .payload = m->payload};
  auto rows = consumed.rows();
  ASSERT_TRUE(rows.ok()) << rows.status();
  const kingfisher::Rows want = TwoRows();
  EXPECT_EQ(rows->collection_id, want.collection_id);
  EXPECT_EQ(rows->partition, want.partition);
  EXPECT_EQ(rows->dim, want.dim);
  EXPECT_EQ(rows->pks, want.pks);
  EXPECT_EQ(rows->vectors, want.vectors);
  EXPECT_EQ(rows->attributes, want.attributes);
  EXPECT_EQ(consumed.deleted_pks().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PublicMessageTest, BadRowsAreRefusedBeforeAnythingIsBuilt) {
  kingfisher::Rows no_rows = TwoRows();
  no_rows.pks.clear();
  no_rows.vectors.clear();
  no_rows.attributes.clear();
  kingfisher::Rows zero_dim = TwoRows();
  zero_dim.dim = 0;
  kingfisher::Rows short_vectors = TwoRows();
  short_vectors.vectors.pop_back();
  kingfisher::Rows attributes = TwoRows();
  attributes.attributes.pop_back();
  for (const kingfisher::Rows& bad : {no_rows, zero_dim, short_vectors, attributes}) {
    absl::Status s = kingfisher::InsertMessage("kf-dml_0_7v0", bad).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_EQ(GetStreamingCode(s), StreamingCode::kInvalidArgument) << s;
  }
  EXPECT_EQ(kingfisher::DeleteMessage("kf-dml_0_7v0", {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PublicMessageTest, DeletedPksRoundTrip) {
  auto m = kingfisher::DeleteMessage("kf-dml_0_7v0", {3, 1, 2});
  ASSERT_TRUE(m.ok()) << m.status();
  kingfisher::ConsumedMessage consumed{.type = MessageType::kDelete, .payload = m->payload};
  EXPECT_EQ(*consumed.deleted_pks(), (std::vector<int64_t>{3, 1, 2}));
  EXPECT_EQ(consumed.rows().status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(PublicMessageTest, UserPropertiesPassReservedKeysAreRefused) {
  kingfisher::Message user{.type = MessageType::kInsert, .vchannel = "kf-dml_0_x", .payload = "p"};
  user.properties.insert_or_assign("origin", "sensor-7");
  auto converted = ToMutableMessage(user);
  ASSERT_TRUE(converted.ok()) << converted.status();
  EXPECT_EQ(converted->type(), MessageType::kInsert);
  EXPECT_EQ(converted->vchannel(), "kf-dml_0_x");
  EXPECT_EQ(converted->payload(), "p");
  EXPECT_EQ(converted->GetProperty("origin"), "sensor-7");

  for (const char* key : {"_ik", "_tx", "_bh", "_vc", "_"}) {
    kingfisher::Message forged = user;
    forged.properties.insert_or_assign(key, "x");
    absl::Status s = ToMutableMessage(forged).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << key;
    EXPECT_NE(s.message().find("nothing was sent"), absl::string_view::npos) << s;
  }
}

TEST(PublicMessageTest, TraceparentRoundTripsAndBadOnesAreRefused) {
  const std::string text = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
  auto tc = kingfisher::TraceContext::FromTraceparent(text);
  ASSERT_TRUE(tc.has_value());
  EXPECT_TRUE(tc->valid());
  EXPECT_TRUE(tc->sampled());
  EXPECT_EQ(tc->ToTraceparent(), text);
  EXPECT_FALSE(kingfisher::TraceContext().valid());
  EXPECT_FALSE(kingfisher::TraceContext::FromTraceparent(
                   "00-00000000000000000000000000000000-00f067aa0ba902b7-01")
                   .has_value());
  EXPECT_FALSE(kingfisher::TraceContext::FromTraceparent("garbage").has_value());
}

}  // namespace
}  // namespace kf::client
