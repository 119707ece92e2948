// Collections end to end over `kingfisher run standalone` (docs/ddl.md, docs/ddl-node.md): DDL
// over the raw generated stub, data through the client library, and a restart.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "collections_rpc.h"
#include "common/errors.h"
#include "kingfisher/client.h"
#include "message/builders.h"
#include "server_process.h"

namespace kf::testing {
namespace {

namespace v1 = kingfisher::v1;

constexpr uint32_t kDim = 4;

class CollectionsServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(ServerProcess::Options{.data_dir = dir_.path()});
    ASSERT_TRUE(server_->Start()) << server_->Output();
    Connect();
  }
  void Connect() {
    rpc_ = std::make_unique<CollectionsRpc>(server_->address());
    kingfisher::ClientOptions o;
    o.endpoint = server_->address();
    o.append_timeout = std::chrono::seconds(20);
    auto client = kingfisher::Client::Connect(o);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    auto producer = client_->CreateProducer();
    ASSERT_TRUE(producer.ok()) << producer.status();
    producer_ = *std::move(producer);
  }
  void Restart() {
    producer_.reset();
    client_.reset();
    auto stopped = server_->Stop();
    ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << stopped.output;
    ASSERT_TRUE(server_->Start()) << server_->Output();
    Connect();
  }

  absl::StatusOr<v1::CollectionInfo> Create(const std::string& name, uint32_t shards) {
    return rpc_->Create(name, kDim, v1::L2, shards);
  }
  std::vector<std::string> List() {
    auto listed = rpc_->List();
    EXPECT_TRUE(listed.ok()) << listed.status();
    std::vector<std::string> names;
    if (listed.ok()) {
      for (const auto& c : *listed) names.push_back(c.schema().name());
    }
    return names;
  }
  // Two rows of `dim` floats into `vchannel` of collection `id`.
  absl::Status Insert(const std::string& vchannel, int64_t id, uint32_t dim) {
    v1::InsertBatch batch;
    batch.set_collection_id(id);
    batch.add_pks(1);
    batch.add_pks(2);
    batch.set_dim(dim);
    for (uint32_t i = 0; i < 2 * dim; ++i) batch.add_vectors(0.5f * static_cast<float>(i));
    return producer_
        ->AppendSync({.type = kingfisher::MessageType::kInsert,
                      .vchannel = vchannel,
                      .payload = batch.SerializeAsString()})
        .status();
  }

  TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<CollectionsRpc> rpc_;
  std::unique_ptr<kingfisher::Client> client_;
  std::unique_ptr<kingfisher::Producer> producer_;
};

TEST_F(CollectionsServerTest, CreateInsertDropAndTheCatalogSurvivesARestart) {
  auto orders = Create("orders", 4);
  ASSERT_TRUE(orders.ok()) << orders.status();
  EXPECT_EQ(orders->state(), v1::COLLECTION_CREATED);
  ASSERT_EQ(orders->schema().vchannels_size(), 4);
  const int64_t id = orders->schema().collection_id();
  const std::string vchannel = orders->schema().vchannels(2);

  absl::Status ok = Insert(vchannel, id, kDim);
  EXPECT_TRUE(ok.ok()) << ok;
  absl::Status wrong_dim = Insert(vchannel, id, kDim * 2);
  EXPECT_EQ(wrong_dim.code(), absl::StatusCode::kInvalidArgument) << wrong_dim;

  auto kept = Create("kept", 2);
  ASSERT_TRUE(kept.ok()) << kept.status();
  ASSERT_TRUE(rpc_->Drop("orders").ok());
  absl::Status after_drop = Insert(vchannel, id, kDim);
  EXPECT_EQ(after_drop.code(), absl::StatusCode::kNotFound) << after_drop;
  EXPECT_EQ(GetStreamingCode(after_drop), StreamingCode::kCollectionNotFound);
  EXPECT_EQ(GetStreamingCode(rpc_->Describe("orders").status()),
            StreamingCode::kCollectionNotFound);

  Restart();
  EXPECT_EQ(List(), std::vector<std::string>{"kept"});
  auto described = rpc_->Describe("kept");
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->SerializeAsString(), kept->SerializeAsString());
  EXPECT_EQ(GetStreamingCode(rpc_->Describe("orders").status()),
            StreamingCode::kCollectionNotFound);
  // The node rebuilt the collection rules from its log.
  after_drop = Insert(vchannel, id, kDim);
  EXPECT_EQ(GetStreamingCode(after_drop), StreamingCode::kCollectionNotFound) << after_drop;
  absl::Status into_kept =
      Insert(kept->schema().vchannels(0), kept->schema().collection_id(), kDim);
  EXPECT_TRUE(into_kept.ok()) << into_kept;
  // The name is free again; the id is not reused.
  auto recreated = Create("orders", 1);
  ASSERT_TRUE(recreated.ok()) << recreated.status();
  EXPECT_GT(recreated->schema().collection_id(), kept->schema().collection_id());
}

}  // namespace
}  // namespace kf::testing
