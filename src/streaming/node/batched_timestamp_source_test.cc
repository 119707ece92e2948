#include "streaming/node/batched_timestamp_source.h"

#include <vector>

#include "gtest/gtest.h"

namespace kf::streaming {
namespace {

// An oracle that counts up from 1000 and records what it was asked.
class FakeOracle : public TimestampBatchFetcher {
 public:
  absl::StatusOr<Batch> Fetch(uint32_t count, TimeTick at_least, absl::Time) override {
    asks.push_back({count, at_least.value()});
    if (!fail.ok()) return fail;
    next = std::max(next, at_least.value() + 1);
    Batch b{TimeTick(next), count};
    next += count;
    return b;
  }
  struct Ask {
    uint32_t count;
    uint64_t at_least;
  };
  std::vector<Ask> asks;
  uint64_t next = 1000;
  absl::Status fail;
};

class BatchedTimestampSourceTest : public ::testing::Test {
 protected:
  BatchedTimestampSource::Options Opts(uint32_t batch) {
    BatchedTimestampSource::Options o;
    o.batch = batch;
    o.clock = [this] { return now_; };
    return o;
  }
  FakeOracle oracle_;
  absl::Time now_ = absl::FromUnixSeconds(1000);
};

TEST_F(BatchedTimestampSourceTest, ServesFromOneBatchWhileFresh) {
  BatchedTimestampSource src(&oracle_, Opts(4));
  EXPECT_EQ(src.Allocate()->value(), 1000u);
  EXPECT_EQ(src.Allocate(2)->value(), 1001u);
  EXPECT_EQ(src.Allocate()->value(), 1003u);
  EXPECT_EQ(oracle_.asks.size(), 1u);
  EXPECT_EQ(src.Allocate()->value(), 1004u);  // exhausted: a second batch
  EXPECT_EQ(oracle_.asks.size(), 2u);
  EXPECT_EQ(oracle_.asks[1].at_least, 1003u);
}

TEST_F(BatchedTimestampSourceTest, StaleBatchIsDropped) {
  BatchedTimestampSource src(&oracle_, Opts(100));
  EXPECT_EQ(src.Allocate()->value(), 1000u);
  now_ += absl::Milliseconds(51);
  oracle_.next = 5000;  // time moved on at the oracle
  EXPECT_EQ(src.Allocate()->value(), 5000u);
  EXPECT_EQ(oracle_.asks.size(), 2u);
}

TEST_F(BatchedTimestampSourceTest, ObserveRaisesEverythingAfter) {
  BatchedTimestampSource src(&oracle_, Opts(100));
  EXPECT_EQ(src.Allocate()->value(), 1000u);
  ASSERT_TRUE(src.Observe(TimeTick(1050)).ok());
  EXPECT_GT(src.Allocate()->value(), 1050u);
  EXPECT_EQ(oracle_.asks.back().at_least, 1050u);
}

TEST_F(BatchedTimestampSourceTest, OracleFailureHandsOutNothing) {
  BatchedTimestampSource src(&oracle_, Opts(2));
  oracle_.fail = absl::UnavailableError("no coordinator");
  EXPECT_EQ(src.Allocate().status().code(), absl::StatusCode::kUnavailable);
  oracle_.fail = absl::OkStatus();
  EXPECT_EQ(src.Allocate()->value(), 1000u);
}

TEST_F(BatchedTimestampSourceTest, BatchBelowWhatWasHandedOutIsRefused) {
  BatchedTimestampSource src(&oracle_, Opts(1));
  EXPECT_EQ(src.Allocate()->value(), 1000u);
  class Backwards : public TimestampBatchFetcher {
   public:
    absl::StatusOr<Batch> Fetch(uint32_t count, TimeTick, absl::Time) override {
      return Batch{TimeTick(10), count};
    }
  } backwards;
  BatchedTimestampSource src2(&backwards, Opts(1));
  ASSERT_TRUE(src2.Observe(TimeTick(500)).ok());
  EXPECT_EQ(src2.Allocate().status().code(), absl::StatusCode::kInternal);
}

// What a strong search needs: a timestamp above what another node's batch still hands out.
TEST_F(BatchedTimestampSourceTest, OracleSourceIsAboveEveryBatchHandedOut) {
  BatchedTimestampSource node_a(&oracle_, Opts(100));
  BatchedTimestampSource node_b(&oracle_, Opts(100));
  OracleTimestampSource strong(&oracle_);
  EXPECT_EQ(node_a.Allocate()->value(), 1000u);
  EXPECT_EQ(node_b.Allocate()->value(), 1100u);  // acknowledged on node b
  const uint64_t t = strong.Allocate()->value();
  EXPECT_GT(t, 1100u);
  EXPECT_LT(node_a.Allocate()->value(), t);  // node a's batch lies below: not a fresh T
  node_a.DropBatchBelow(TimeTick(t));
  EXPECT_GT(node_a.Allocate()->value(), t);  // a search waiting for T gets TimeTicks above it
  EXPECT_EQ(oracle_.asks.back().at_least, 1001u) << "the oracle is not asked beyond its own";
  // A batch that reaches above t is kept.
  const uint64_t kept = node_a.Allocate()->value();
  node_a.DropBatchBelow(TimeTick(kept));
  EXPECT_EQ(node_a.Allocate()->value(), kept + 1);
  oracle_.fail = absl::UnavailableError("no coordinator");
  EXPECT_TRUE(absl::IsUnavailable(strong.Allocate().status()));
  EXPECT_TRUE(absl::IsInvalidArgument(strong.Allocate(0).status()));
}

}  // namespace
}  // namespace kf::streaming
