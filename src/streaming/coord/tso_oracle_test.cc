#include "streaming/coord/tso_oracle.h"

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/meta/testing/fault_meta_store.h"

namespace kf::streaming {
namespace {

constexpr char kKey[] = "kf/kf/tso";

class TimestampOracleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("tso_oracle_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto store = meta::EmbeddedMetaStore::Open(dir_.string(), {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    faulty_ = std::make_unique<meta::testing::FaultMetaStore>(store_.get());
  }
  void TearDown() override {
    faulty_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  static absl::Time Deadline() { return absl::Now() + absl::Seconds(10); }

  // An active oracle over the fault-injecting store, on the test's clock.
  std::unique_ptr<TimestampOracle> OpenOracle(uint64_t window_ms = 1000) {
    auto o = TimestampOracle::Open(
        faulty_.get(), kKey, {.window_ms = window_ms, .now_ms = [this] { return now_ms_.load(); }},
        Deadline());
    EXPECT_TRUE(o.ok()) << o.status();
    return o.ok() ? *std::move(o) : nullptr;
  }
  uint64_t StoredMark() {
    auto got = store_->Get(kKey, Deadline());
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? std::stoull(got->kv.value) : 0;
  }

  std::filesystem::path dir_;
  std::unique_ptr<meta::EmbeddedMetaStore> store_;
  std::unique_ptr<meta::testing::FaultMetaStore> faulty_;
  std::atomic<uint64_t> now_ms_{1'000'000};
};

TEST_F(TimestampOracleTest, StrictlyIncreasingAndServedFromMemoryBelowTheMark) {
  auto oracle = OpenOracle();
  const int txns_before = faulty_->txn_calls();
  TimeTick prev;
  for (int i = 0; i < 1000; ++i) {
    auto t = oracle->AllocateBatch(3, TimeTick(0));
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_GT(*t, prev);
    prev = TimeTick(t->value() + 2);
  }
  // The clock did not move: one raise covered every allocation.
  EXPECT_EQ(faulty_->txn_calls() - txns_before, 1);
  EXPECT_GT(StoredMark(), prev.value());
  EXPECT_EQ(oracle->mark(), StoredMark());
  // Hybrid time: the physical part follows the clock.
  EXPECT_EQ(PhysicalMs(prev), now_ms_.load());
}

// TryAllocateBatch serves what lies below the mark and, for anything else, hands out nothing
// and makes no store call: the range is AllocateBatch's to serve, after its raise.
TEST_F(TimestampOracleTest, TryAllocateServesBelowTheMarkAndLeavesRaisesToAllocate) {
  auto oracle = OpenOracle();
  // A fresh oracle serves above the mark it read: its first allocation raises.
  auto fresh = oracle->TryAllocateBatch(3, TimeTick(0));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_FALSE(fresh->has_value());
  ASSERT_TRUE(oracle->Allocate().ok());
  auto below = oracle->TryAllocateBatch(3, TimeTick(0));
  ASSERT_TRUE(below.ok()) << below.status();
  ASSERT_TRUE(below->has_value());
  EXPECT_LT((*below)->value() + 2, oracle->mark());

  const int txns_before = faulty_->txn_calls();
  const uint64_t mark_before = oracle->mark();
  const TimeTick ahead(mark_before + 10);  // past the mark: needs a raise
  auto above = oracle->TryAllocateBatch(1, ahead);
  ASSERT_TRUE(above.ok()) << above.status();
  EXPECT_FALSE(above->has_value());
  EXPECT_EQ(faulty_->txn_calls(), txns_before);
  EXPECT_EQ(oracle->mark(), mark_before);
  // Nothing was handed out: the next timestamp below the mark follows the first batch.
  auto next = oracle->TryAllocateBatch(1, TimeTick(0));
  ASSERT_TRUE(next.ok() && next->has_value());
  EXPECT_EQ((*next)->value(), (*below)->value() + 3);

  auto raised = oracle->AllocateBatch(1, ahead);
  ASSERT_TRUE(raised.ok()) << raised.status();
  EXPECT_EQ(raised->value(), ahead.value() + 1);
  EXPECT_EQ(faulty_->txn_calls(), txns_before + 1);

  EXPECT_TRUE(absl::IsInvalidArgument(oracle->TryAllocateBatch(0, TimeTick(0)).status()));
  oracle->Deactivate(absl::UnavailableError("stepped down"));
  EXPECT_TRUE(absl::IsUnavailable(oracle->TryAllocateBatch(1, TimeTick(0)).status()));
}

TEST_F(TimestampOracleTest, FollowsTheClockAndRaisesAsItAdvances) {
  auto oracle = OpenOracle(/*window_ms=*/100);
  TimeTick prev;
  for (int i = 0; i < 50; ++i) {
    now_ms_ += 30;
    auto t = oracle->Allocate();
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_GT(*t, prev);
    EXPECT_EQ(PhysicalMs(*t), now_ms_.load());
    EXPECT_LT(t->value(), oracle->mark());
    prev = *t;
  }
}

TEST_F(TimestampOracleTest, MonotonicAcrossReopenEvenWhenTheClockGoesBack) {
  TimeTick last;
  {
    auto oracle = OpenOracle();
    for (int i = 0; i < 10; ++i) last = *oracle->Allocate();
  }
  now_ms_ = 10;  // a successor whose clock is far behind
  auto oracle = OpenOracle();
  auto t = oracle->Allocate();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(*t, last);
}

TEST_F(TimestampOracleTest, AtLeastIsHonoured) {
  auto oracle = OpenOracle();
  const TimeTick ahead = ComposeTimeTick(now_ms_ + 60'000, 17);  // e.g. a recovered log's tail
  auto t = oracle->AllocateBatch(5, ahead);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->value(), ahead.value() + 1);
  auto next = oracle->Allocate();
  ASSERT_TRUE(next.ok());
  EXPECT_GT(next->value(), ahead.value() + 5);
  EXPECT_GT(StoredMark(), next->value());
}

TEST_F(TimestampOracleTest, ObserveRaisesTheFloorAndPersistsIt) {
  TimeTick observed = ComposeTimeTick(now_ms_ + 10'000, 0);
  {
    auto oracle = OpenOracle();
    ASSERT_TRUE(oracle->Observe(observed).ok());
    EXPECT_GT(oracle->Allocate()->value(), observed.value());
  }
  // The promise survives a restart: the mark was raised above the observed timestamp.
  auto oracle = OpenOracle();
  EXPECT_GT(oracle->Allocate()->value(), observed.value());
}

TEST_F(TimestampOracleTest, RejectsBadArguments) {
  auto oracle = OpenOracle();
  EXPECT_TRUE(absl::IsInvalidArgument(oracle->Allocate(0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      oracle->AllocateBatch(TimestampOracle::kMaxBatch + 1, TimeTick(0)).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(oracle->AllocateBatch(1, TimeTick(~uint64_t{0} - 1)).status()));
  EXPECT_TRUE(oracle->AllocateBatch(TimestampOracle::kMaxBatch, TimeTick(0)).ok());
}

TEST_F(TimestampOracleTest, InactiveUntilActivatedAndAfterDeactivate) {
  TimestampOracle oracle(faulty_.get(), kKey, {.now_ms = [this] { return now_ms_.load(); }});
  EXPECT_TRUE(absl::IsUnavailable(oracle.Allocate().status()));
  ASSERT_TRUE(oracle.Activate(Deadline()).ok());
  auto t = oracle.Allocate();
  ASSERT_TRUE(t.ok());
  oracle.Deactivate(absl::UnavailableError("not the coordinator"));
  EXPECT_TRUE(absl::IsUnavailable(oracle.Allocate().status()));
  EXPECT_TRUE(absl::IsUnavailable(oracle.state()));
  ASSERT_TRUE(oracle.Activate(Deadline()).ok());
  auto u = oracle.Allocate();
  ASSERT_TRUE(u.ok());
  EXPECT_GT(*u, *t);
}

TEST_F(TimestampOracleTest, LosingTheCasStopsServingAndNothingIsHandedOutTwice) {
  std::set<uint64_t> handed_out;
  auto take = [&](TimestampOracle* o) -> absl::Status {
    auto t = o->AllocateBatch(4, TimeTick(0));
    if (!t.ok()) return t.status();
    for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(handed_out.insert(t->value() + i).second);
    return absl::OkStatus();
  };
  auto old_leader = OpenOracle(/*window_ms=*/100);
  ASSERT_TRUE(take(old_leader.get()).ok());
  // A new leader takes over while the old one still believes it leads.
  auto new_leader = OpenOracle(/*window_ms=*/100);
  ASSERT_TRUE(take(new_leader.get()).ok());
  // Below its own mark the old oracle may still serve (disjoint from the new one's range)...
  ASSERT_TRUE(take(old_leader.get()).ok());
  // ...but its next raise fails the CAS, and from then on it refuses everything.
  now_ms_ += 1000;
  absl::Status s = take(old_leader.get());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  now_ms_ -= 1000;
  EXPECT_TRUE(absl::IsFailedPrecondition(take(old_leader.get())));
  EXPECT_TRUE(absl::IsFailedPrecondition(old_leader->state()));
  now_ms_ += 1000;
  ASSERT_TRUE(take(new_leader.get()).ok());
}

TEST_F(TimestampOracleTest, DeposedOracleNotifiesItsOwner) {
  std::atomic<int> deposed{0};
  auto a = TimestampOracle::Open(faulty_.get(), kKey,
                                 {.window_ms = 100,
                                  .now_ms = [this] { return now_ms_.load(); },
                                  .on_deposed = [&] { ++deposed; }},
                                 Deadline());
  ASSERT_TRUE(a.ok());
  auto b = OpenOracle(/*window_ms=*/100);
  ASSERT_TRUE(b->Allocate().ok());
  EXPECT_TRUE(absl::IsFailedPrecondition((*a)->Allocate().status()));
  EXPECT_EQ(deposed.load(), 1);
  // Re-activated (its owner confirmed it leads): serves above everything handed out.
  ASSERT_TRUE((*a)->Activate(Deadline()).ok());
  EXPECT_TRUE((*a)->Allocate().ok());
}

TEST_F(TimestampOracleTest, StoreFailureHandsOutNothing) {
  auto oracle = OpenOracle(/*window_ms=*/100);
  auto before = oracle->Allocate();
  ASSERT_TRUE(before.ok());
  const uint64_t mark = StoredMark();
  faulty_->SetDown(true);
  now_ms_ += 1000;  // beyond the mark: a raise is needed
  for (int i = 0; i < 3; ++i) {
    absl::Status s = oracle->Allocate().status();
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  }
  faulty_->SetDown(false);
  EXPECT_EQ(StoredMark(), mark);
  auto after = oracle->Allocate();
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GT(*after, *before);
  EXPECT_GT(StoredMark(), after->value());
}

TEST_F(TimestampOracleTest, AmbiguousRaiseThatDidNotLandIsRetriedAfterARead) {
  auto oracle = OpenOracle(/*window_ms=*/100);
  ASSERT_TRUE(oracle->Allocate().ok());
  faulty_->FailNextTxns(1, absl::DeadlineExceededError("lost"), /*applied=*/false);
  now_ms_ += 1000;
  EXPECT_TRUE(absl::IsUnavailable(oracle->Allocate().status()));
  auto t = oracle->Allocate();  // the re-read shows the key unchanged: raise again
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(StoredMark(), t->value());
}

TEST_F(TimestampOracleTest, AmbiguousRaiseThatLandedDeposesUntilReactivated) {
  auto oracle = OpenOracle(/*window_ms=*/100);
  ASSERT_TRUE(oracle->Allocate().ok());
  faulty_->FailNextTxns(1, absl::UnavailableError("connection reset"), /*applied=*/true);
  now_ms_ += 1000;
  EXPECT_TRUE(absl::IsUnavailable(oracle->Allocate().status()));
  const uint64_t landed = StoredMark();
  // The key moved and the oracle cannot tell whose write it was: it refuses...
  EXPECT_TRUE(absl::IsFailedPrecondition(oracle->Allocate().status()));
  // ...until its owner re-activates it; it then serves above the mark that landed.
  ASSERT_TRUE(oracle->Activate(Deadline()).ok());
  auto t = oracle->Allocate();
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(t->value(), landed);
}

TEST_F(TimestampOracleTest, ConcurrentAllocationsAreUnique) {
  auto oracle = OpenOracle(/*window_ms=*/5);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 2000;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int j = 0; j < kPerThread; ++j) {
        if (j % 100 == 0) now_ms_ += 3;
        auto t = oracle->AllocateBatch(2, TimeTick(0));
        ASSERT_TRUE(t.ok()) << t.status();
        got[i].push_back(t->value());
        got[i].push_back(t->value() + 1);
      }
    });
  }
  for (auto& t : threads) t.join();
  std::set<uint64_t> all;
  for (const auto& v : got) {
    for (size_t k = 1; k < v.size(); ++k) EXPECT_GT(v[k], v[k - 1]);
    all.insert(v.begin(), v.end());
  }
  EXPECT_EQ(all.size(), size_t{kThreads * kPerThread * 2});
}

}  // namespace
}  // namespace kf::streaming
