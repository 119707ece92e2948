// The collection value helpers: the pinned shard hash, Insert/Delete grouping, the client-side
// argument checks and the catalog conversion.
#include "kingfisher/collections.h"

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "client/collection_convert.h"
#include "client/collection_rules.h"
#include "common/errors.h"
#include "gtest/gtest.h"
#include "message/payload.h"

namespace kf::client {
namespace {

using kingfisher::CollectionInfo;
using kingfisher::ShardOfPk;

// ShardOfPk is a wire-level contract (consumers and search nodes route by it): fmix64(pk) mod
// shards. These values were computed independently (Python) from MurmurHash3's fmix64; a
// change here moves existing rows to other shards.
TEST(ShardOfPkTest, PinnedValues) {
  struct Case {
    int64_t pk;
    uint32_t shards;
    uint32_t want;
  };
  const Case cases[] = {
      {0, 64, 0},
      {1, 64, 44},
      {2, 64, 39},
      {3, 16, 14},
      {42, 3, 0},
      {-1, 64, 33},
      {std::numeric_limits<int64_t>::max(), 16, 10},
      {std::numeric_limits<int64_t>::min(), 64, 19},
      {470795705276170240, 3, 2},
      // shards = 2^32 - 1 exposes most bits of the hash.
      {1, 0xffffffffu, 3910764584u},
      {2, 0xffffffffu, 2680532487u},
      {-1, 0xffffffffu, 2956448044u},
      {470795705276170240, 0xffffffffu, 1622706962u},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(ShardOfPk(c.pk, c.shards), c.want) << "pk " << c.pk << " shards " << c.shards;
  }
}

TEST(ShardOfPkTest, OneShardTakesEverything) {
  for (int64_t pk : {int64_t{0}, int64_t{7}, int64_t{-7}}) EXPECT_EQ(ShardOfPk(pk, 1), 0u);
}

TEST(ShardOfPkTest, ConsecutivePksSpreadOverShards) {
  // Allocated ids are consecutive; each of 4 shards should get about a quarter.
  std::vector<int> count(4);
  for (int64_t i = 0; i < 4000; ++i) ++count[ShardOfPk(470795705276170240 + i, 4)];
  for (int c : count) {
    EXPECT_GT(c, 800);
    EXPECT_LT(c, 1200);
  }
}

CollectionInfo Collection(uint32_t shards, uint32_t dim = 2) {
  CollectionInfo c;
  c.id = 7;
  c.name = "orders";
  c.dim = dim;
  c.shards = shards;
  for (uint32_t i = 0; i < shards; ++i) {
    c.vchannels.push_back("kf-dml_" + std::to_string(i) + "_7v" + std::to_string(i));
  }
  return c;
}

TEST(InsertMessagesTest, OneMessagePerShardWithRowsInInputOrder) {
  const CollectionInfo c = Collection(3);
  std::vector<int64_t> pks;
  std::vector<float> vectors;
  for (int64_t pk = 1; pk <= 30; ++pk) {
    pks.push_back(pk);
    vectors.push_back(static_cast<float>(pk));
    vectors.push_back(static_cast<float>(-pk));
  }
  auto msgs = kingfisher::InsertMessages(c, pks, vectors, "p1");
  ASSERT_TRUE(msgs.ok()) << msgs.status();
  ASSERT_EQ(msgs->size(), 3u);  // 30 pks reach all 3 shards
  size_t rows = 0;
  std::string last_vchannel;
  for (const auto& m : *msgs) {
    EXPECT_EQ(m.type, kingfisher::MessageType::kInsert);
    EXPECT_LT(last_vchannel, std::string(m.vchannel));  // by shard
    last_vchannel = std::string(m.vchannel);
    auto batch = DecodeInsertBatch(m.payload);
    ASSERT_TRUE(batch.ok()) << batch.status();
    EXPECT_EQ(batch->collection_id(), 7);
    EXPECT_EQ(batch->partition(), "p1");
    EXPECT_EQ(batch->dim(), 2u);
    int64_t prev = 0;
    for (int i = 0; i < batch->pks_size(); ++i) {
      const int64_t pk = batch->pks(i);
      EXPECT_GT(pk, prev);  // input order kept
      prev = pk;
      const uint32_t shard = ShardOfPk(pk, 3);
      EXPECT_EQ(std::string(m.vchannel), c.vchannels[shard]);
      EXPECT_EQ(batch->vectors(2 * i), static_cast<float>(pk));
      EXPECT_EQ(batch->vectors(2 * i + 1), static_cast<float>(-pk));
    }
    rows += batch->pks_size();
  }
  EXPECT_EQ(rows, 30u);
}

TEST(InsertMessagesTest, OnlyShardsWithRowsGetAMessage) {
  const CollectionInfo c = Collection(64, 1);
  auto msgs = kingfisher::InsertMessages(c, {1, 2}, {0.5f, 1.5f});
  ASSERT_TRUE(msgs.ok()) << msgs.status();
  ASSERT_EQ(msgs->size(), 2u);
  EXPECT_EQ((*msgs)[0].vchannel, "kf-dml_39_7v39");  // pk 2 -> 39
  EXPECT_EQ((*msgs)[1].vchannel, "kf-dml_44_7v44");  // pk 1 -> 44
}

TEST(InsertMessagesTest, Errors) {
  const CollectionInfo c = Collection(2);
  auto code = [](const auto& r) { return r.status().code(); };
  EXPECT_EQ(code(kingfisher::InsertMessages(c, {}, {})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(kingfisher::InsertMessages(c, {1}, {1.0f})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(kingfisher::InsertMessages(c, {1}, {1, 2, 3})),
            absl::StatusCode::kInvalidArgument);
  CollectionInfo none = c;
  none.vchannels.clear();
  EXPECT_EQ(code(kingfisher::InsertMessages(none, {1}, {1, 2})),
            absl::StatusCode::kInvalidArgument);
  CollectionInfo mismatch = c;
  mismatch.shards = 3;
  auto r = kingfisher::InsertMessages(mismatch, {1}, {1, 2});
  EXPECT_EQ(code(r), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("2 vchannels but shards = 3"), std::string::npos)
      << r.status();
  CollectionInfo no_dim = c;
  no_dim.dim = 0;
  EXPECT_EQ(code(kingfisher::InsertMessages(no_dim, {1}, {})), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GetStreamingCode(kingfisher::InsertMessages(c, {}, {}).status()),
            StreamingCode::kInvalidArgument);
}

TEST(DeleteMessagesTest, GroupsPksByShard) {
  const CollectionInfo c = Collection(2);
  // Shards of 2: pk 1 -> 0, 2 -> 1, 3 -> 0, -1 -> 1.
  auto msgs = kingfisher::DeleteMessages(c, {1, 2, 3, -1});
  ASSERT_TRUE(msgs.ok()) << msgs.status();
  ASSERT_EQ(msgs->size(), 2u);
  EXPECT_EQ((*msgs)[0].type, kingfisher::MessageType::kDelete);
  EXPECT_EQ((*msgs)[0].vchannel, "kf-dml_0_7v0");
  auto d0 = DecodeDeletePks((*msgs)[0].payload);
  ASSERT_TRUE(d0.ok());
  EXPECT_EQ(std::vector<int64_t>(d0->pks().begin(), d0->pks().end()), (std::vector<int64_t>{1, 3}));
  auto d1 = DecodeDeletePks((*msgs)[1].payload);
  ASSERT_TRUE(d1.ok());
  EXPECT_EQ(std::vector<int64_t>(d1->pks().begin(), d1->pks().end()),
            (std::vector<int64_t>{2, -1}));

  EXPECT_EQ(kingfisher::DeleteMessages(c, {}).status().code(), absl::StatusCode::kInvalidArgument);
  CollectionInfo none = c;
  none.vchannels.clear();
  EXPECT_EQ(kingfisher::DeleteMessages(none, {1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CollectionRulesTest, Names) {
  EXPECT_TRUE(CheckCollectionName("collection", "a").ok());
  EXPECT_TRUE(CheckCollectionName("collection", "_x9_Y").ok());
  EXPECT_TRUE(CheckCollectionName("collection", std::string(255, 'a')).ok());
  for (std::string bad :
       {std::string(), std::string(256, 'a'), std::string("9a"), std::string("a-b"),
        std::string("a b"), std::string("a/b"), std::string("\xc3\xa9")}) {
    absl::Status s = CheckCollectionName("partition", bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("partition name"), std::string::npos) << s;
  }
}

TEST(CollectionRulesTest, Spec) {
  kingfisher::CollectionSpec spec{.name = "c", .dim = 4, .metric = "cosine", .shards = 2};
  auto m = CheckCollectionSpec(spec);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(*m, kingfisher::v1::COSINE);
  EXPECT_EQ(*ParseMetric("L2"), kingfisher::v1::L2);
  EXPECT_EQ(*ParseMetric("ip"), kingfisher::v1::IP);
  EXPECT_FALSE(ParseMetric("").ok());
  EXPECT_FALSE(ParseMetric("L1").ok());
  EXPECT_FALSE(ParseMetric("METRIC_UNSPECIFIED").ok());

  auto bad = [&](auto edit, std::string_view needle) {
    kingfisher::CollectionSpec s = spec;
    edit(s);
    auto r = CheckCollectionSpec(s);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(r.status().message()).find(needle), std::string::npos) << r.status();
  };
  bad([](auto& s) { s.dim = 0; }, "dim 0 must be 1..32768");
  bad([](auto& s) { s.dim = kMaxDim + 1; }, "dim 32769");
  bad([](auto& s) { s.shards = 0; }, "shards 0 must be 1..64");
  bad([](auto& s) { s.shards = 65; }, "shards 65");
  bad([](auto& s) { s.metric = "hamming"; }, "metric 'hamming'");
  bad([](auto& s) { s.name = "1x"; }, "collection name '1x'");
  // The largest legal spec passes.
  kingfisher::CollectionSpec max{.name = "m", .dim = kMaxDim, .metric = "IP", .shards = 64};
  EXPECT_TRUE(CheckCollectionSpec(max).ok());
}

TEST(CollectionConvertTest, ProtoToInfo) {
  kingfisher::v1::CollectionInfo p;
  p.set_database("db");
  p.mutable_schema()->set_name("orders");
  p.mutable_schema()->set_collection_id(12);
  p.mutable_schema()->set_dim(8);
  p.mutable_schema()->set_metric(kingfisher::v1::IP);
  p.mutable_schema()->set_shards(2);
  p.mutable_schema()->add_vchannels("kf-dml_0_12v0");
  p.mutable_schema()->add_vchannels("kf-dml_1_12v1");
  p.set_state(kingfisher::v1::COLLECTION_DROPPING);
  auto* part = p.add_partitions();
  part->set_name("_default");
  part->set_state(kingfisher::v1::PARTITION_CREATING);
  p.set_create_time_ms(1234);
  CollectionInfo c = ToCollectionInfo(p);
  EXPECT_EQ(c.id, 12);
  EXPECT_EQ(c.database, "db");
  EXPECT_EQ(c.name, "orders");
  EXPECT_EQ(c.dim, 8u);
  EXPECT_EQ(c.metric, "IP");
  EXPECT_EQ(c.shards, 2u);
  EXPECT_EQ(c.vchannels, (std::vector<std::string>{"kf-dml_0_12v0", "kf-dml_1_12v1"}));
  EXPECT_EQ(c.state, "DROPPING");
  ASSERT_EQ(c.partitions.size(), 1u);
  EXPECT_EQ(c.partitions[0].name, "_default");
  EXPECT_EQ(c.partitions[0].state, "CREATING");
  EXPECT_EQ(c.create_time_ms, 1234);

  EXPECT_EQ(MetricName(kingfisher::v1::METRIC_UNSPECIFIED), "UNKNOWN(0)");
  EXPECT_EQ(CollectionStateName(static_cast<kingfisher::v1::CollectionState>(9)), "UNKNOWN(9)");
  EXPECT_EQ(CollectionStateName(kingfisher::v1::COLLECTION_CREATED), "CREATED");
  EXPECT_EQ(PartitionStateName(kingfisher::v1::PARTITION_DROPPING), "DROPPING");
}

}  // namespace
}  // namespace kf::client
