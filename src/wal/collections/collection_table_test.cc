#include "wal/collections/collection_table.h"

#include <gtest/gtest.h>

#include "common/errors.h"
#include "wal/collections/test_messages.h"

namespace kf::wal {
namespace {

using namespace kf::wal::testing;  // NOLINT: the message builders
using Kind = CollectionAppend::Kind;
using State = CollectionTable::State;

constexpr char kVc[] = "kf-dml_0_42v1";
constexpr char kRaw[] = "kf-dml_0_orders";

void ExpectCode(const absl::Status& s, StreamingCode code, std::string_view needle = "") {
  EXPECT_EQ(s.code(), ToStatusCode(code)) << s;
  EXPECT_EQ(GetStreamingCode(s), code) << s;
  EXPECT_NE(std::string(s.message()).find(needle), std::string::npos)
      << "message '" << s.message() << "' lacks '" << needle << "'";
}

// Prepare + Admit + (on success) Apply, as the WAL does for one append.
absl::Status Append(CollectionTable& t, const MutableMessage& m) {
  auto a = CollectionTable::Prepare(m);
  if (!a.ok()) return a.status();
  absl::Status s = t.Admit(m.vchannel(), *a);
  if (s.ok()) t.Apply(*a);
  return s;
}

TEST(CollectionTableTest, PrepareClassifies) {
  auto raw = CollectionTable::Prepare(Insert(kRaw, 4));
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->kind, Kind::kUnchecked);
  MutableMessage opaque(MessageType::kInsert, "\xff not a batch");
  opaque.set_vchannel(kRaw);  // raw vchannels carry anything
  EXPECT_EQ(CollectionTable::Prepare(opaque)->kind, Kind::kUnchecked);
  EXPECT_EQ(CollectionTable::Prepare(NewTimeTickMessage(TimeTick(1)))->kind, Kind::kUnchecked);

  auto insert = CollectionTable::Prepare(Insert(kVc, 8, 1, "_default"));
  ASSERT_TRUE(insert.ok()) << insert.status();
  EXPECT_EQ(insert->kind, Kind::kData);
  EXPECT_EQ(insert->dim, 8u);
  EXPECT_EQ(insert->partition, "");       // the default partition
  EXPECT_TRUE(insert->vchannel.empty());  // not needed after the enqueue
  EXPECT_EQ(CollectionTable::Prepare(NewBeginTxnMessage(kVc, 100))->kind, Kind::kData);

  auto create = CollectionTable::Prepare(CreateCollection(kVc, 42, 16, 1));
  ASSERT_TRUE(create.ok()) << create.status();
  EXPECT_EQ(create->kind, Kind::kDdl);
  EXPECT_EQ(create->dim, 16u);
  EXPECT_EQ(create->vchannel, kVc);
}

TEST(CollectionTableTest, PrepareRejectsBadPayloadsOnCollectionVChannels) {
  MutableMessage opaque(MessageType::kInsert, "\xff not a batch");
  opaque.set_vchannel(kVc);
  ExpectCode(CollectionTable::Prepare(opaque).status(), StreamingCode::kInvalidArgument,
             "does not parse");
  MutableMessage other = Insert(kVc, 4);
  kingfisher::v1::InsertBatch b;
  b.set_collection_id(41);
  b.set_dim(4);
  *other.mutable_payload() = b.SerializeAsString();
  ExpectCode(CollectionTable::Prepare(other).status(), StreamingCode::kInvalidArgument,
             "names collection 41");
  ExpectCode(CollectionTable::Prepare(CreateCollection(kVc, 43, 4, 1)).status(),
             StreamingCode::kInvalidArgument, "belongs to collection 42");
  ExpectCode(CollectionTable::Prepare(CreateCollection(kVc, 42, 4, 1, /*shards=*/1)).status(),
             StreamingCode::kInvalidArgument, "has 1 shards");
  MutableMessage unlisted = CreateCollection(kVc, 42, 4, 1);
  kingfisher::v1::CollectionSchema s;
  s.ParseFromString(unlisted.payload());
  s.add_vchannels("kf-dml_0_42v0");
  *unlisted.mutable_payload() = s.SerializeAsString();
  ExpectCode(CollectionTable::Prepare(unlisted).status(), StreamingCode::kInvalidArgument,
             "does not list");
  ExpectCode(CollectionTable::Prepare(DropCollection(kVc, 7, 1)).status(),
             StreamingCode::kInvalidArgument, "names collection 7");
  ExpectCode(
      CollectionTable::Prepare(PartitionDdl(MessageType::kCreatePartition, kVc, 42, "_default", 1))
          .status(),
      StreamingCode::kInvalidArgument, "default partition");
  MutableMessage bad_vc = Insert("kf-dml_0_042v1", 4);
  ExpectCode(CollectionTable::Prepare(bad_vc).status(), StreamingCode::kInvalidArgument,
             "malformed collection vchannel");
}

TEST(CollectionTableTest, DataNeedsALiveCollectionOfTheSameDim) {
  CollectionTable t;
  EXPECT_EQ(t.state(kVc), State::kUnknown);
  ExpectCode(Append(t, Insert(kVc, 4)), StreamingCode::kCollectionNotFound, "does not exist");
  ExpectCode(Append(t, NewDeleteMessage(kVc, {})), StreamingCode::kCollectionNotFound);
  ExpectCode(Append(t, NewBeginTxnMessage(kVc, 10)), StreamingCode::kCollectionNotFound);
  EXPECT_TRUE(Append(t, Insert(kRaw, 4)).ok());

  ASSERT_TRUE(Append(t, CreateCollection(kVc, 42, 4, 1)).ok());
  EXPECT_EQ(t.state(kVc), State::kCreated);
  EXPECT_TRUE(Append(t, Insert(kVc, 4)).ok());
  EXPECT_TRUE(Append(t, Insert(kVc, 4, 1, "_default")).ok());
  EXPECT_TRUE(Append(t, NewBeginTxnMessage(kVc, 10)).ok());
  ExpectCode(Append(t, Insert(kVc, 5)), StreamingCode::kInvalidArgument, "dim 5");
  // Other shards of the same collection are other vchannels, created by their own copy.
  ExpectCode(Append(t, Insert("kf-dml_0_42v0", 4)), StreamingCode::kCollectionNotFound);

  ASSERT_TRUE(Append(t, DropCollection(kVc, 42, 2)).ok());
  EXPECT_EQ(t.state(kVc), State::kDropped);
  ExpectCode(Append(t, Insert(kVc, 4)), StreamingCode::kCollectionNotFound, "was dropped");
  ExpectCode(Append(t, NewCommitTxnMessage(kVc, TxnId(1))), StreamingCode::kCollectionNotFound);
  EXPECT_EQ(t.size(), 1u);
}

TEST(CollectionTableTest, CollectionDdlRules) {
  CollectionTable t;
  ExpectCode(Append(t, Broadcast(MutableMessage(MessageType::kManualFlush, ""), 9)),
             StreamingCode::kOk);  // pchannel-level (no vchannel): unchecked
  MutableMessage flush(MessageType::kManualFlush, "");
  flush.set_vchannel(kVc);
  ExpectCode(Append(t, flush), StreamingCode::kCollectionNotFound);
  ASSERT_TRUE(Append(t, CreateCollection(kVc, 42, 4, 1)).ok());
  EXPECT_TRUE(Append(t, flush).ok());
  ExpectCode(Append(t, CreateCollection(kVc, 42, 4, 2)), StreamingCode::kCollectionExists,
             "already has its collection");
  ASSERT_TRUE(Append(t, DropCollection(kVc, 42, 3)).ok());
  ExpectCode(Append(t, DropCollection(kVc, 42, 4)), StreamingCode::kCollectionNotFound,
             "was dropped");
  ExpectCode(Append(t, CreateCollection(kVc, 42, 4, 5)), StreamingCode::kCollectionExists,
             "never reused");
  ExpectCode(Append(t, flush), StreamingCode::kCollectionNotFound, "was dropped");

  // A drop converges even where the create never arrived: nothing may follow it.
  const std::string other = "kf-dml_0_43v0";
  ASSERT_TRUE(Append(t, DropCollection(other, 43, 6)).ok());
  EXPECT_EQ(t.state(other), State::kDropped);
  ExpectCode(Append(t, CreateCollection(other, 43, 4, 7)), StreamingCode::kCollectionExists);
}

TEST(CollectionTableTest, PartitionRules) {
  CollectionTable t;
  auto create_p = [&](const std::string& p, uint64_t id) {
    return Append(t, PartitionDdl(MessageType::kCreatePartition, kVc, 42, p, id));
  };
  auto drop_p = [&](const std::string& p, uint64_t id) {
    return Append(t, PartitionDdl(MessageType::kDropPartition, kVc, 42, p, id));
  };
  ExpectCode(create_p("p1", 1), StreamingCode::kCollectionNotFound);
  ASSERT_TRUE(Append(t, CreateCollection(kVc, 42, 4, 2)).ok());
  ExpectCode(Append(t, Insert(kVc, 4, 1, "p1")), StreamingCode::kCollectionNotFound,
             "partition 'p1'");
  ASSERT_TRUE(create_p("p1", 3).ok());
  EXPECT_TRUE(Append(t, Insert(kVc, 4, 1, "p1")).ok());
  ExpectCode(create_p("p1", 4), StreamingCode::kCollectionExists, "partition 'p1'");
  ExpectCode(drop_p("p2", 5), StreamingCode::kCollectionNotFound, "partition 'p2'");
  ASSERT_TRUE(drop_p("p1", 6).ok());
  ExpectCode(Append(t, Insert(kVc, 4, 1, "p1")), StreamingCode::kCollectionNotFound);
  EXPECT_TRUE(Append(t, Insert(kVc, 4)).ok());  // the default partition stays
  ASSERT_TRUE(create_p("p1", 7).ok());          // a name can come back
  ASSERT_TRUE(Append(t, DropCollection(kVc, 42, 8)).ok());
  ExpectCode(create_p("p3", 9), StreamingCode::kCollectionNotFound, "was dropped");
  ExpectCode(drop_p("p1", 10), StreamingCode::kCollectionNotFound, "was dropped");
}

TEST(CollectionTableTest, ReplayTrustsTheLog) {
  CollectionTable t;
  t.Replay(CreateCollection(kVc, 42, 4, 1));
  t.Replay(PartitionDdl(MessageType::kCreatePartition, kVc, 42, "p", 2));
  t.Replay(CreateCollection(kVc, 42, 9, 3));  // a second create changes nothing
  EXPECT_TRUE(Append(t, Insert(kVc, 4, 1, "p")).ok());
  MutableMessage garbage(MessageType::kDropCollection, "\xff");
  garbage.set_vchannel(kVc);
  t.Replay(garbage);  // does not Prepare: ignored
  EXPECT_EQ(t.state(kVc), State::kCreated);
  t.Replay(DropCollection(kVc, 42, 4));
  t.Replay(CreateCollection(kVc, 42, 4, 5));  // never revives a dropped vchannel
  EXPECT_EQ(t.state(kVc), State::kDropped);
}

TEST(CollectionTableTest, BroadcastKey) {
  auto key = BroadcastKey(CreateCollection(kVc, 42, 4, 77));
  ASSERT_TRUE(key.has_value());
  EXPECT_EQ(key->producer, kVc);
  EXPECT_EQ(key->sequence, 77u);
  EXPECT_FALSE(BroadcastKey(Insert(kVc, 4)).has_value());
  EXPECT_FALSE(BroadcastKey(NewCreateCollectionMessage(kVc, {})).has_value());  // no `_bh`
  auto pchannel_level = BroadcastKey(Broadcast(MutableMessage(MessageType::kManualFlush, ""), 3));
  ASSERT_TRUE(pchannel_level.has_value());
  EXPECT_EQ(pchannel_level->producer, "");
}

}  // namespace
}  // namespace kf::wal
