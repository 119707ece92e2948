// Collections across the distributed service (fixture: cluster_fixture.h): DDL at
// `kingfisher run coord`, whose broadcaster appends the copies to the three nodes through a
// client of its own address; data admitted by each node's collection rules; then the
// coordinator killed with SIGKILL and restarted: the next term recovers the DDL state and
// serves again.
#include <set>
#include <string>

#include "cluster_fixture.h"
#include "common/errors.h"
#include "grpcpp/grpcpp.h"
#include "kingfisher/v1/collections.grpc.pb.h"
#include "message/builders.h"
#include "message/vchannel_name.h"
#include "rpc/status_convert.h"

namespace kf::cluster_testing {
namespace {

namespace v1 = kingfisher::v1;

class CollectionsClusterTest : public ClusterTest {
 protected:
  void SetUp() override {
    ClusterTest::SetUp();
    if (HasFatalFailure()) return;
    stub_ = v1::Collections::NewStub(
        grpc::CreateChannel(coord_->address(), grpc::InsecureChannelCredentials()));
    auto producer = client_->CreateProducer();
    ASSERT_TRUE(producer.ok()) << producer.status();
    producer_ = *std::move(producer);
  }

  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    return ctx;
  }
  absl::StatusOr<v1::CollectionInfo> Create(const std::string& name) {
    v1::CreateCollectionRequest r;
    r.set_name(name);
    r.set_dim(2);
    r.set_metric(v1::IP);
    r.set_shards(kPChannels);
    v1::CreateCollectionResponse resp;
    absl::Status s = rpc::FromGrpcStatus(stub_->CreateCollection(Ctx().get(), r, &resp));
    if (!s.ok()) return s;
    return resp.collection();
  }
  absl::StatusOr<v1::CollectionInfo> Describe(const std::string& name) {
    v1::DescribeCollectionRequest r;
    r.set_name(name);
    v1::DescribeCollectionResponse resp;
    absl::Status s = rpc::FromGrpcStatus(stub_->DescribeCollection(Ctx().get(), r, &resp));
    if (!s.ok()) return s;
    return resp.collection();
  }
  absl::Status Insert(const v1::CollectionInfo& c, int shard) {
    v1::InsertBatch batch;
    batch.set_collection_id(c.schema().collection_id());
    batch.add_pks(shard + 1);
    batch.set_dim(2);
    batch.add_vectors(1.0f);
    batch.add_vectors(2.0f);
    return producer_->AppendSync(NewInsertMessage(c.schema().vchannels(shard), batch)).status();
  }

  std::unique_ptr<v1::Collections::Stub> stub_;
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
    described = Describe("orders");
    if (absl::IsUnavailable(described.status())) {
      absl::SleepFor(absl::Milliseconds(50));  // polling a remote state, bounded by the deadline
    }
  }
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->SerializeAsString(), orders->SerializeAsString());

  v1::DropCollectionRequest drop;
  drop.set_name("orders");
  v1::DropCollectionResponse dropped;
  absl::Status s = rpc::FromGrpcStatus(stub_->DropCollection(Ctx().get(), drop, &dropped));
  ASSERT_TRUE(s.ok()) << s;
  for (int shard = 0; shard < kPChannels; ++shard) {
    absl::Status refused = Insert(*orders, shard);
    EXPECT_EQ(GetStreamingCode(refused), StreamingCode::kCollectionNotFound)
        << "shard " << shard << ": " << refused;
  }
  EXPECT_EQ(GetStreamingCode(Describe("orders").status()), StreamingCode::kCollectionNotFound);
}

}  // namespace
}  // namespace kf::cluster_testing
