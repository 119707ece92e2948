// A secondary's catalog following the primary's DDL (ReplicatedDdl over Catalog's replicated
// callback), from copies recorded in the store as the secondary's nodes record them
// (replicate/ddl_pieces.h), and its refusal of DDL of its own.
#include "streaming/ddl/replicated_ddl.h"

#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/errors.h"
#include "kingfisher/v1/replicate.pb.h"
#include "streaming/ddl/catalog.h"
#include "streaming/ddl/testing/ddl_test_util.h"

namespace kf::streaming::ddl {
namespace {

using kingfisher::v1::ReplicatedDdlPiece;

const std::vector<std::string> kPChannels = {"kf-dml_0", "kf-dml_1"};
constexpr uint64_t kSourceBroadcast = 41;

class ReplicatedDdlTest : public testing::DdlTest {
 protected:
  void SetUp() override {
    DdlTest::SetUp();
    broadcaster_ = std::make_unique<Broadcaster>(faulty_.get(), keys_, revision_, &appender_,
                                                 Broadcaster::Options{});
    catalog_ = std::make_unique<Catalog>(
        broadcaster_.get(), keys_, Catalog::Options{.cluster_id = "kf", .pchannels = kPChannels});
    ASSERT_TRUE(broadcaster_->Recover(Deadline()).ok());
    replicated_ = std::make_unique<ReplicatedDdl>(&broadcaster_->store(), keys_,
                                                  catalog_->ReplicatedCallback());
  }
  void TearDown() override {
    replicated_.reset();
    catalog_.reset();
    broadcaster_.reset();
    DdlTest::TearDown();
  }

  // Records copy `index` of the source broadcast `id` (of `count`) on kf-dml_<index>, as a
  // node does before (landed false) and after (true) its append.
  void Record(uint64_t id, const MutableMessage& m, uint32_t index, uint32_t count, bool landed) {
    MutableMessage copy = m;
    copy.set_vchannel(absl::StrCat("kf-dml_", index, "_7v", index));
    ReplicatedDdlPiece p;
    p.set_source_cluster_id("east");
    p.set_source_broadcast_id(id);
    p.set_index(index);
    p.set_vchannel_count(count);
    p.set_message(copy.Encode());
    p.set_pchannel(absl::StrCat("kf-dml_", index));
    p.set_source_time_tick(100 + index);
    p.set_landed(landed);
    ASSERT_TRUE(
        store_->Put(keys_.replicated_ddl("east", id, index), p.SerializeAsString(), Deadline())
            .ok());
  }
  int Poll() {
    absl::StatusOr<int> applied = replicated_->Poll(std::stop_token());
    EXPECT_TRUE(applied.ok()) << applied.status();
    return applied.value_or(-1);
  }
  absl::StatusOr<kingfisher::v1::CollectionInfo> Describe() {
    return catalog_->DescribeCollection("sales", "orders", Deadline());
  }
  static MutableMessage Create() {
    kingfisher::v1::CollectionSchema s;
    s.set_database("sales");
    s.set_name("orders");
    s.set_collection_id(7);
    s.set_dim(4);
    s.set_metric(kingfisher::v1::L2);
    s.set_shards(2);
    s.add_vchannels("kf-dml_0_7v0");
    s.add_vchannels("kf-dml_1_7v1");
    return MutableMessage(MessageType::kCreateCollection, s.SerializeAsString());
  }
  static MutableMessage Partition(MessageType type) {
    kingfisher::v1::PartitionPayload p;
    p.set_collection_id(7);
    p.set_partition("p1");
    return MutableMessage(type, p.SerializeAsString());
  }
  static Catalog::Call Call() {
    Catalog::Call c;
    c.deadline = Deadline();
    return c;
  }

  testing::FakeAppender appender_;
  std::unique_ptr<Broadcaster> broadcaster_;
  std::unique_ptr<Catalog> catalog_;
  std::unique_ptr<ReplicatedDdl> replicated_;
};

TEST_F(ReplicatedDdlTest, ACollectionIsCreatedOnceEveryCopyLandedAndOnlyOnce) {
  Record(kSourceBroadcast, Create(), 0, 2, /*landed=*/true);
  Record(kSourceBroadcast, Create(), 1, 2, /*landed=*/false);
  EXPECT_EQ(Poll(), 0);
  EXPECT_EQ(GetStreamingCode(Describe().status()), StreamingCode::kCollectionNotFound);

  Record(kSourceBroadcast, Create(), 1, 2, /*landed=*/true);
  EXPECT_EQ(Poll(), 1);
  absl::StatusOr<kingfisher::v1::CollectionInfo> c = Describe();
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->state(), kingfisher::v1::COLLECTION_CREATED);
  EXPECT_EQ(c->schema().collection_id(), 7);
  EXPECT_EQ(c->create_broadcast_id(), kSourceBroadcast);
  EXPECT_EQ(c->schema().vchannels_size(), 2);
  ASSERT_EQ(c->partitions_size(), 1);
  // The records became one marker, outside the prefix that every poll reads.
  auto dump = Dump();
  EXPECT_EQ(dump.count(keys_.replicated_ddl("east", kSourceBroadcast, 0)), 0u);
  EXPECT_EQ(dump.count(keys_.replicated_ddl_done("east", kSourceBroadcast)), 1u);
  for (const auto& [key, value] : dump)
    EXPECT_FALSE(key.starts_with(keys_.replicated_ddl_prefix()));

  // A copy recorded again (a replicator's retry) applies nothing and is removed.
  Record(kSourceBroadcast, Create(), 0, 2, /*landed=*/true);
  EXPECT_EQ(Poll(), 0);
  EXPECT_EQ(Dump().count(keys_.replicated_ddl("east", kSourceBroadcast, 0)), 0u);
  EXPECT_EQ(Describe()->create_time_ms(), c->create_time_ms());
}

// A marker of the layout before replicated_ddl_done (`<prefix><source>/<id>/done`) counts as
// applied and moves to its place, taking along the copies recorded again.
TEST_F(ReplicatedDdlTest, AMarkerOfTheOlderLayoutIsMovedAndNothingIsAppliedTwice) {
  const std::string legacy =
      absl::StrCat(keys_.replicated_ddl_prefix(), "east/", absl::StrFormat("%020u", 5), "/done");
  ASSERT_TRUE(store_->Put(legacy, "CreateCollection", Deadline()).ok());
  Record(5, Create(), 0, 2, true);
  Record(5, Create(), 1, 2, true);
  EXPECT_EQ(Poll(), 0);
  EXPECT_EQ(GetStreamingCode(Describe().status()), StreamingCode::kCollectionNotFound);
  auto dump = Dump();
  EXPECT_EQ(dump.count(legacy), 0u);
  EXPECT_EQ(dump.count(keys_.replicated_ddl("east", 5, 0)), 0u);
  EXPECT_EQ(dump[keys_.replicated_ddl_done("east", 5)], "CreateCollection");

  // Later broadcasts of the source are applied as usual.
  Record(6, Create(), 0, 2, true);
  Record(6, Create(), 1, 2, true);
  EXPECT_EQ(Poll(), 1);
  EXPECT_TRUE(Describe().ok());
}

// More broadcasts pending than one read of markers takes (ReplicatedDdl reads them 100 at a
// time): each is applied once, and a copy recorded again past the first hundred is removed.
TEST_F(ReplicatedDdlTest, ManyPendingBroadcastsAreEachAppliedOnce) {
  constexpr uint64_t kBroadcasts = 130;
  for (uint64_t id = 1; id <= kBroadcasts; ++id) {
    Record(id, Partition(MessageType::kCreatePartition), 0, 2, true);
    Record(id, Partition(MessageType::kCreatePartition), 1, 2, true);
  }
  EXPECT_EQ(Poll(), static_cast<int>(kBroadcasts));
  Record(125, Partition(MessageType::kCreatePartition), 0, 2, true);
  Record(kBroadcasts + 1, Partition(MessageType::kCreatePartition), 0, 2, true);
  Record(kBroadcasts + 1, Partition(MessageType::kCreatePartition), 1, 2, true);
  EXPECT_EQ(Poll(), 1);  // only the new one
  EXPECT_EQ(Dump().count(keys_.replicated_ddl("east", 125, 0)), 0u);
}

TEST_F(ReplicatedDdlTest, PartitionsAndTheDropFollowThePrimary) {
  Record(1, Create(), 0, 2, true);
  Record(1, Create(), 1, 2, true);
  Record(2, Partition(MessageType::kCreatePartition), 0, 2, true);
  Record(2, Partition(MessageType::kCreatePartition), 1, 2, true);
  EXPECT_EQ(Poll(), 2);  // broadcast ids in order: the collection first
  ASSERT_EQ(Describe()->partitions_size(), 2);
  EXPECT_EQ(Describe()->partitions(1).name(), "p1");

  Record(3, Partition(MessageType::kDropPartition), 0, 2, true);
  Record(3, Partition(MessageType::kDropPartition), 1, 2, true);
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(Describe()->partitions_size(), 1);

  kingfisher::v1::DropCollection drop;
  drop.set_collection_id(7);
  const MutableMessage dropped(MessageType::kDropCollection, drop.SerializeAsString());
  Record(4, dropped, 0, 2, true);
  Record(4, dropped, 1, 2, true);
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(GetStreamingCode(Describe().status()), StreamingCode::kCollectionNotFound);
}

TEST_F(ReplicatedDdlTest, ADropNeverOvertakesItsCreate) {
  kingfisher::v1::DropCollection drop;
  drop.set_collection_id(7);
  const MutableMessage dropped(MessageType::kDropCollection, drop.SerializeAsString());
  // The create's second copy is in the log, but its node has not marked it landed yet.
  Record(1, Create(), 0, 2, true);
  Record(1, Create(), 1, 2, false);
  Record(2, dropped, 0, 2, true);
  Record(2, dropped, 1, 2, true);
  EXPECT_EQ(Poll(), 0);
  Record(1, Create(), 1, 2, true);
  EXPECT_EQ(Poll(), 2);
  EXPECT_EQ(GetStreamingCode(Describe().status()), StreamingCode::kCollectionNotFound);
}

TEST_F(ReplicatedDdlTest, DdlOfACollectionThisClusterNeverHadChangesNothing) {
  // Created on the primary before replication started.
  Record(3, Partition(MessageType::kCreatePartition), 0, 2, true);
  Record(3, Partition(MessageType::kCreatePartition), 1, 2, true);
  EXPECT_EQ(Poll(), 1);
  EXPECT_EQ(Dump().count(keys_.replicated_ddl("east", 3, 0)), 0u);
  EXPECT_EQ(GetStreamingCode(Describe().status()), StreamingCode::kCollectionNotFound);
}

TEST_F(ReplicatedDdlTest, ASecondaryRefusesDdlOfItsOwnNamingThePrimary) {
  ASSERT_TRUE(catalog_
                  ->CreateCollection({.database = "sales",
                                      .name = "orders",
                                      .dim = 4,
                                      .metric = kingfisher::v1::L2,
                                      .shards = 1},
                                     Call())
                  .ok());
  kingfisher::v1::ReplicateConfiguration config;
  for (const char* id : {"east", "kf"}) {
    kingfisher::v1::ReplicateCluster* c = config.add_clusters();
    c->set_cluster_id(id);
    c->set_endpoint(absl::StrCat(id, ":19530"));
    for (int i = 0; i < 2; ++i) c->add_pchannels(absl::StrCat(id, "-dml_", i));
  }
  kingfisher::v1::ReplicateTopologyEdge* edge = config.add_topology();
  edge->set_source_cluster_id("east");
  edge->set_target_cluster_id("kf");
  ASSERT_TRUE(store_->Put(keys_.replicate_config(), config.SerializeAsString(), Deadline()).ok());
  const auto before = Dump();

  absl::Status created = catalog_
                             ->CreateCollection({.database = "sales",
                                                 .name = "other",
                                                 .dim = 4,
                                                 .metric = kingfisher::v1::L2,
                                                 .shards = 1},
                                                Call())
                             .status();
  EXPECT_EQ(GetStreamingCode(created), StreamingCode::kReplicateViolation) << created;
  EXPECT_NE(created.message().find("secondary of cluster east (east:19530)"), std::string::npos)
      << created;
  EXPECT_EQ(GetStreamingCode(catalog_->DropCollection("sales", "orders", Call())),
            StreamingCode::kReplicateViolation);
  EXPECT_EQ(GetStreamingCode(catalog_->CreatePartition("sales", "orders", "p", Call())),
            StreamingCode::kReplicateViolation);
  EXPECT_EQ(Dump(), before);  // nothing written
}

}  // namespace
}  // namespace kf::streaming::ddl
