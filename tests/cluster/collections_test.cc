// Collections across the distributed service (fixture: cluster_fixture.h): DDL at
// `kingfisher run coord`, whose broadcaster appends the copies to the three nodes through a
// client of its own address; data admitted by each node's collection rules; then the
// coordinator killed with SIGKILL and restarted: the next term recovers the DDL state and
// serves again.
#include <chrono>
#include <set>
#include <string>

#include "cluster_fixture.h"
#include "collections_rpc.h"
#include "common/errors.h"
#include "message/builders.h"
#include "message/vchannel_name.h"

namespace kf::cluster_testing {
namespace {

namespace v1 = kingfisher::v1;

class CollectionsClusterTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    rpc_ = std::make_unique<kf::testing::CollectionsRpc>(coord_->address());
    auto producer = client_->CreateProducer();
    ASSERT_TRUE(producer.ok()) << producer.status();
    producer_ = *std::move(producer);
  }

  absl::StatusOr<v1::CollectionInfo> Create(const std::string& name) {
    return rpc_->Create(name, /*dim=*/2, v1::IP, kPChannels);
  }
  absl::Status Insert(const v1::CollectionInfo& c, int shard) {
    v1::InsertBatch batch;
    batch.set_collection_id(c.schema().collection_id());
    batch.add_pks(shard + 1);
    batch.set_dim(2);
    batch.add_vectors(1.0f);
    batch.add_vectors(2.0f);
    return producer_
        ->AppendSync({.type = kingfisher::MessageType::kInsert,
                      .vchannel = c.schema().vchannels(shard),
                      .payload = batch.SerializeAsString()})
        .status();
  }

  std::unique_ptr<kf::testing::CollectionsRpc> rpc_;
  std::unique_ptr<kingfisher::Producer> producer_;
};

TEST_F(CollectionsClusterTest, DdlReachesEveryNodeAndTheNextCoordinatorTermServesIt) {
  ASSERT_TRUE(WaitSettled(absl::Seconds(30)));
  auto orders = Create("orders");
  ASSERT_TRUE(orders.ok()) << orders.status() << "\n" << coord_->Output();
  ASSERT_EQ(orders->state(), v1::COLLECTION_CREATED);
  std::set<std::string> pchannels;
  for (const std::string& v : orders->schema().vchannels()) {
    pchannels.insert(*PChannelOfVChannel(v));
  }
  EXPECT_EQ(pchannels.size(), static_cast<size_t>(kPChannels));  // one shard per node
  for (int shard = 0; shard < kPChannels; ++shard) {
    absl::Status s = Insert(*orders, shard);
    EXPECT_TRUE(s.ok()) << "shard " << shard << ": " << s;
  }

  coord_->Kill();
  ASSERT_TRUE(coord_->Start()) << coord_->Output();  // same address
  // UNAVAILABLE until the new coordinator acts (after the dead one's lease) and recovered.
  absl::StatusOr<v1::CollectionInfo> described = absl::UnavailableError("not asked yet");
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (absl::IsUnavailable(described.status()) && absl::Now() < deadline) {
    described = rpc_->Describe("orders");
    if (absl::IsUnavailable(described.status())) {
      absl::SleepFor(absl::Milliseconds(50));  // polling a remote state, bounded by the deadline
    }
  }
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->SerializeAsString(), orders->SerializeAsString());

  absl::Status s = rpc_->Drop("orders");
  ASSERT_TRUE(s.ok()) << s;
  for (int shard = 0; shard < kPChannels; ++shard) {
    absl::Status refused = Insert(*orders, shard);
    EXPECT_EQ(GetStreamingCode(refused), StreamingCode::kCollectionNotFound)
        << "shard " << shard << ": " << refused;
  }
  EXPECT_EQ(GetStreamingCode(rpc_->Describe("orders").status()),
            StreamingCode::kCollectionNotFound);
}

}  // namespace
}  // namespace kf::cluster_testing
