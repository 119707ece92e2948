// The MetaStore contract, run against both implementations: the embedded store (in a temp
// dir) and etcd (a real etcd server started once for the suite on loopback ports). Every test
// works under its own key prefix, so the shared etcd needs no cleanup between tests.
#include <unistd.h>

#include <atomic>
#include <barrier>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/testing/wait_until.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/meta/etcd_meta_store.h"
#include "storage/meta/testing/etcd_process.h"
#include "storage/meta/testing/watch_recorder.h"

namespace kf::meta {
namespace {

using ::kf::meta::testing::Describe;
using ::kf::meta::testing::EtcdProcess;
using ::kf::meta::testing::WatchRecorder;
using ::testing::ElementsAre;

absl::Time Deadline() { return absl::Now() + absl::Seconds(10); }

// One etcd for the whole suite, started on first use (so an embedded-only run starts none)
// and killed at exit.
EtcdProcess& SharedEtcd() {
  static auto* etcd = [] {
    static std::unique_ptr<EtcdProcess> owner = std::make_unique<EtcdProcess>();
    absl::Status s = owner->Start();
    if (!s.ok()) ADD_FAILURE() << s;
    return owner.get();
  }();
  return *etcd;
}

class MetaStoreContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    prefix_ = std::string("/contract/") + info->name() + "/";
    if (GetParam() == "embedded") {
      dir_ = std::filesystem::temp_directory_path() /
             ("kf-meta-contract-" + std::to_string(::getpid()));
      std::filesystem::remove_all(dir_);
      auto store = EmbeddedMetaStore::Open(dir_.string(), {});
      ASSERT_TRUE(store.ok()) << store.status();
      store_ = *std::move(store);
    } else {
      auto store = EtcdMetaStore::Create({.endpoints = {SharedEtcd().endpoint()}});
      ASSERT_TRUE(store.ok()) << store.status();
      store_ = *std::move(store);
      // The shared etcd outlives a test (and --gtest_repeat runs it again): start clean.
      ASSERT_TRUE(store_->DeletePrefix(prefix_, Deadline()).ok());
    }
  }
  void TearDown() override {
    store_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  std::string Key(const std::string& name) const { return prefix_ + name; }

  int64_t MustPut(const std::string& key, const std::string& value, LeaseId lease = kNoLease) {
    auto rev = store_->Put(key, value, Deadline(), lease);
    EXPECT_TRUE(rev.ok()) << rev.status();
    return rev.ok() ? *rev : 0;
  }

  // Polls Get until the key is gone (lease expiry is asynchronous in both stores).
  bool WaitUntilAbsent(const std::string& key, absl::Duration timeout) {
    return kf::testing::WaitUntil(
        [&] { return absl::IsNotFound(store_->Get(key, Deadline()).status()); }, timeout,
        absl::Milliseconds(20));
  }

  std::string prefix_;
  std::filesystem::path dir_;
  std::unique_ptr<MetaStore> store_;
};

TEST_P(MetaStoreContractTest, PutGetRangeDelete) {
  const int64_t r1 = MustPut(Key("a"), "1");
  auto a = store_->Get(Key("a"), Deadline());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->kv.value, "1");
  EXPECT_EQ(a->kv.create_revision, r1);
  EXPECT_EQ(a->kv.mod_revision, r1);
  EXPECT_EQ(a->kv.version, 1);
  EXPECT_GE(a->revision, r1);

  const int64_t r2 = MustPut(Key("a"), "2");
  EXPECT_GT(r2, r1);
  a = store_->Get(Key("a"), Deadline());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kv.value, "2");
  EXPECT_EQ(a->kv.create_revision, r1);
  EXPECT_EQ(a->kv.mod_revision, r2);
  EXPECT_EQ(a->kv.version, 2);

  MustPut(Key("c"), "3");
  const int64_t r4 = MustPut(Key("b"), "4");
  MustPut("/contract/other", "not in the prefix");
  auto range = store_->Range(prefix_, Deadline());
  ASSERT_TRUE(range.ok()) << range.status();
  std::vector<std::string> keys;
  for (const KeyValue& kv : range->kvs) keys.push_back(kv.key);
  EXPECT_THAT(keys, ElementsAre(Key("a"), Key("b"), Key("c")));
  EXPECT_FALSE(range->more);
  EXPECT_GE(range->revision, r4);

  auto limited = store_->Range(prefix_, Deadline(), 2);
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->kvs.size(), 2u);
  EXPECT_TRUE(limited->more);

  auto del = store_->Delete(Key("a"), Deadline());
  ASSERT_TRUE(del.ok()) << del.status();
  EXPECT_EQ(del->deleted, 1);
  EXPECT_TRUE(absl::IsNotFound(store_->Get(Key("a"), Deadline()).status()));
  auto again = store_->Delete(Key("a"), Deadline());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->deleted, 0);
  EXPECT_EQ(again->revision, del->revision);  // deleting nothing is no mutation

  auto all = store_->DeletePrefix(prefix_, Deadline());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->deleted, 2);
  EXPECT_TRUE(store_->Range(prefix_, Deadline())->kvs.empty());
  EXPECT_TRUE(store_->Get("/contract/other", Deadline()).ok());
}

TEST_P(MetaStoreContractTest, RevisionIncreasesWithEveryMutationOnly) {
  int64_t last = MustPut(Key("k"), "v");
  for (int i = 0; i < 5; ++i) {
    const int64_t rev = MustPut(Key("k" + std::to_string(i)), "v");
    EXPECT_GT(rev, last);
    last = rev;
  }
  auto txn = store_->Txn({}, {Op::Put(Key("x"), "1"), Op::Put(Key("y"), "2")}, {}, Deadline());
  ASSERT_TRUE(txn.ok()) << txn.status();
  EXPECT_GT(txn->revision, last);
  // One txn, one revision for all its writes.
  EXPECT_EQ(store_->Get(Key("x"), Deadline())->kv.mod_revision, txn->revision);
  EXPECT_EQ(store_->Get(Key("y"), Deadline())->kv.mod_revision, txn->revision);
  auto read_only = store_->Txn({}, {Op::Get(Key("x"))}, {}, Deadline());
  ASSERT_TRUE(read_only.ok());
  EXPECT_EQ(read_only->revision, txn->revision);
}

TEST_P(MetaStoreContractTest, TxnCreateIfAbsent) {
  const std::string k = Key("assignment");
  auto first = store_->Txn({Compare::Absent(k)}, {Op::Put(k, "node-1")}, {Op::Get(k)}, Deadline());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->succeeded);
  auto second = store_->Txn({Compare::Absent(k)}, {Op::Put(k, "node-2")}, {Op::Get(k)}, Deadline());
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE(second->succeeded);
  EXPECT_EQ(second->revision, first->revision);  // the else branch only read
  ASSERT_EQ(second->results.size(), 1u);
  ASSERT_EQ(second->results[0].kvs.size(), 1u);
  EXPECT_EQ(second->results[0].kvs[0].value, "node-1");
  EXPECT_EQ(store_->Get(k, Deadline())->kv.value, "node-1");
}

TEST_P(MetaStoreContractTest, TxnUpdateIfModRevision) {
  const std::string k = Key("term");
  const int64_t rev = MustPut(k, "1");
  auto update = store_->Txn({Compare::ModRevisionIs(k, rev)}, {Op::Put(k, "2")}, {}, Deadline());
  ASSERT_TRUE(update.ok()) << update.status();
  EXPECT_TRUE(update->succeeded);
  // A writer still holding the old revision loses.
  auto stale =
      store_->Txn({Compare::ModRevisionIs(k, rev)}, {Op::Put(k, "3")}, {Op::Get(k)}, Deadline());
  ASSERT_TRUE(stale.ok());
  EXPECT_FALSE(stale->succeeded);
  EXPECT_EQ(stale->results[0].kvs[0].value, "2");
  EXPECT_EQ(stale->results[0].kvs[0].mod_revision, update->revision);
  // Value, version and greater-than compares, and a delete in a branch.
  auto multi = store_->Txn({Compare::ValueIs(k, "2"), Compare::VersionIs(k, 2),
                            Compare{.key = k,
                                    .target = Compare::Target::kModRevision,
                                    .result = Compare::Result::kGreater,
                                    .number = rev}},
                           {Op::Delete(k), Op::Put(Key("moved"), "2")}, {}, Deadline());
  ASSERT_TRUE(multi.ok()) << multi.status();
  EXPECT_TRUE(multi->succeeded);
  ASSERT_EQ(multi->results.size(), 2u);
  EXPECT_EQ(multi->results[0].deleted, 1);
  EXPECT_TRUE(absl::IsNotFound(store_->Get(k, Deadline()).status()));
}

TEST_P(MetaStoreContractTest, ConcurrentCasExactlyOneWinnerPerRound) {
  constexpr int kThreads = 4, kRounds = 15;
  const std::string k = Key("leader");
  std::atomic<int64_t> round_revision{MustPut(k, "start")};
  std::atomic<int> winners{0}, errors{0};
  std::vector<int> winners_per_round;
  std::barrier sync(kThreads, [&]() noexcept {
    winners_per_round.push_back(winners.exchange(0));
    auto cur = store_->Get(k, Deadline());
    round_revision = cur.ok() ? cur->kv.mod_revision : -1;
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < kRounds; ++round) {
        auto r = store_->Txn({Compare::ModRevisionIs(k, round_revision)},
                             {Op::Put(k, "thread-" + std::to_string(t))}, {}, Deadline());
        if (!r.ok()) ++errors;
        if (r.ok() && r->succeeded) ++winners;
        sync.arrive_and_wait();
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(winners_per_round, std::vector<int>(kRounds, 1));
}

TEST_P(MetaStoreContractTest, ConcurrentCasIncrementsLoseNothing) {
  constexpr int kThreads = 4, kIncrements = 20;
  const std::string k = Key("counter");
  MustPut(k, "0");
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int done = 0; done < kIncrements;) {
        auto cur = store_->Get(k, Deadline());
        if (!cur.ok()) {
          ++errors;
          return;
        }
        const std::string next = std::to_string(std::stoi(cur->kv.value) + 1);
        auto r = store_->Txn({Compare::ModRevisionIs(k, cur->kv.mod_revision)}, {Op::Put(k, next)},
                             {}, Deadline());
        if (!r.ok()) {
          ++errors;
          return;
        }
        if (r->succeeded) ++done;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(errors, 0);
  EXPECT_EQ(store_->Get(k, Deadline())->kv.value, std::to_string(kThreads * kIncrements));
}

TEST_P(MetaStoreContractTest, LeaseExpiryDeletesKeysAndFiresDeleteEvents) {
  auto lease = store_->GrantLease(absl::Seconds(1), Deadline());
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_GE(lease->ttl, absl::Seconds(1));
  const int64_t put_rev = MustPut(Key("node/1"), "alive", lease->id);
  EXPECT_EQ(store_->Get(Key("node/1"), Deadline())->kv.lease, lease->id);
  WatchRecorder rec;
  auto watch = store_->Watch(prefix_, put_rev + 1, rec.Callback(), Deadline());
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(rec.WaitForEvents(1, absl::Seconds(10)));
  const auto events = rec.events();
  EXPECT_EQ(events[0].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(events[0].kv.key, Key("node/1"));
  EXPECT_GT(events[0].kv.mod_revision, put_rev);
  EXPECT_TRUE(absl::IsNotFound(store_->Get(Key("node/1"), Deadline()).status()));
  EXPECT_TRUE(absl::IsNotFound(store_->KeepAliveOnce(lease->id, Deadline()).status()));
}

TEST_P(MetaStoreContractTest, RevokeLeaseDeletesItsKeys) {
  auto lease = store_->GrantLease(absl::Seconds(30), Deadline());
  ASSERT_TRUE(lease.ok()) << lease.status();
  MustPut(Key("a"), "1", lease->id);
  MustPut(Key("b"), "2", lease->id);
  MustPut(Key("c"), "3");
  ASSERT_TRUE(store_->RevokeLease(lease->id, Deadline()).ok());
  auto range = store_->Range(prefix_, Deadline());
  ASSERT_TRUE(range.ok());
  ASSERT_EQ(range->kvs.size(), 1u);
  EXPECT_EQ(range->kvs[0].key, Key("c"));
  EXPECT_TRUE(absl::IsNotFound(store_->RevokeLease(lease->id, Deadline())));
  EXPECT_TRUE(absl::IsNotFound(store_->KeepAliveOnce(lease->id, Deadline()).status()));
  EXPECT_TRUE(absl::IsNotFound(store_->Put(Key("d"), "x", Deadline(), lease->id).status()));
}

TEST_P(MetaStoreContractTest, KeepAliveKeepsKeys) {
  auto lease = store_->GrantLease(absl::Seconds(1), Deadline());
  ASSERT_TRUE(lease.ok()) << lease.status();
  MustPut(Key("node"), "alive", lease->id);
  // Keep the lease alive for well over twice its TTL; the sleep paces the keepalives (it is
  // what is under test), it does not wait for anything.
  const absl::Time until = absl::Now() + 2.5 * lease->ttl;
  while (absl::Now() < until) {
    auto ttl = store_->KeepAliveOnce(lease->id, Deadline());
    ASSERT_TRUE(ttl.ok()) << ttl.status();
    EXPECT_EQ(*ttl, lease->ttl);
    absl::SleepFor(lease->ttl / 4);
  }
  EXPECT_TRUE(store_->Get(Key("node"), Deadline()).ok());
  // Without keepalives it goes.
  EXPECT_TRUE(WaitUntilAbsent(Key("node"), absl::Seconds(10)));
}

TEST_P(MetaStoreContractTest, WatchReplaysHistoryInOrderThenStreamsLive) {
  const int64_t r1 = MustPut(Key("a"), "1");
  const int64_t r2 = MustPut(Key("b"), "2");
  MustPut("/contract/elsewhere", "x");
  const int64_t r3 = store_->Delete(Key("a"), Deadline())->revision;
  auto txn = store_->Txn({}, {Op::Put(Key("c"), "3"), Op::Put(Key("d"), "4")}, {}, Deadline());
  ASSERT_TRUE(txn.ok());
  const int64_t r4 = txn->revision;

  WatchRecorder rec;
  auto watch = store_->Watch(prefix_, r1, rec.Callback(), Deadline());
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(rec.WaitForEvents(5));
  const int64_t r5 = MustPut(Key("e"), "5");
  ASSERT_TRUE(rec.WaitForEvents(6));
  auto s = [](const std::string& k, const std::string& v, int64_t rev) {
    return "PUT " + k + "=" + v + "@" + std::to_string(rev);
  };
  EXPECT_THAT(Describe(rec.events()),
              ElementsAre(s(Key("a"), "1", r1), s(Key("b"), "2", r2),
                          "DELETE " + Key("a") + "@" + std::to_string(r3), s(Key("c"), "3", r4),
                          s(Key("d"), "4", r4), s(Key("e"), "5", r5)));
  const auto events = rec.events();
  EXPECT_EQ(events[0].kv.version, 1);
  EXPECT_EQ(events[0].kv.create_revision, r1);
  EXPECT_TRUE(rec.error().ok());
}

TEST_P(MetaStoreContractTest, WatchFromNowSkipsHistory) {
  MustPut(Key("old"), "1");
  WatchRecorder rec;
  auto watch = store_->Watch(prefix_, 0, rec.Callback(), Deadline());
  ASSERT_TRUE(watch.ok()) << watch.status();
  const int64_t rev = MustPut(Key("new"), "2");
  ASSERT_TRUE(rec.WaitForEvents(1));
  EXPECT_THAT(Describe(rec.events()),
              ElementsAre("PUT " + Key("new") + "=2@" + std::to_string(rev)));
}

TEST_P(MetaStoreContractTest, CancelledWatchGetsNothingMore) {
  WatchRecorder cancelled, sentinel;
  auto watch = store_->Watch(prefix_, 0, cancelled.Callback(), Deadline());
  ASSERT_TRUE(watch.ok());
  MustPut(Key("a"), "1");
  ASSERT_TRUE(cancelled.WaitForEvents(1));
  watch->reset();
  auto other = store_->Watch(prefix_, 0, sentinel.Callback(), Deadline());
  ASSERT_TRUE(other.ok());
  MustPut(Key("b"), "2");
  ASSERT_TRUE(sentinel.WaitForEvents(1));  // delivered to a live watch by now
  EXPECT_EQ(cancelled.events().size(), 1u);
}

TEST_P(MetaStoreContractTest, WatchFromCompactedRevisionIsOutOfRange) {
  const int64_t r1 = MustPut(Key("k"), "1");
  const int64_t r2 = MustPut(Key("k"), "2");
  ASSERT_TRUE(store_->Compact(r2, Deadline()).ok());
  EXPECT_EQ(store_->Compact(r1, Deadline()).code(), absl::StatusCode::kOutOfRange);
  WatchRecorder rec;
  auto watch = store_->Watch(prefix_, r1, rec.Callback(), Deadline());
  ASSERT_TRUE(watch.ok()) << watch.status();
  ASSERT_TRUE(rec.WaitForError());
  EXPECT_EQ(rec.error().code(), absl::StatusCode::kOutOfRange) << rec.error();
  EXPECT_TRUE(rec.events().empty());
  // The caller re-lists and watches from the listed revision + 1.
  auto list = store_->Range(prefix_, Deadline());
  ASSERT_TRUE(list.ok());
  WatchRecorder again;
  auto rewatch = store_->Watch(prefix_, list->revision + 1, again.Callback(), Deadline());
  ASSERT_TRUE(rewatch.ok());
  const int64_t r3 = MustPut(Key("k"), "3");
  ASSERT_TRUE(again.WaitForEvents(1));
  EXPECT_EQ(again.events()[0].kv.mod_revision, r3);
}

TEST_P(MetaStoreContractTest, ExpiredDeadlineFailsWithoutEffect) {
  const absl::Time past = absl::Now() - absl::Seconds(1);
  EXPECT_EQ(store_->Put(Key("k"), "v", past).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(store_->Get(Key("k"), past).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(store_->Range(prefix_, past).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(store_->Txn({}, {Op::Put(Key("k"), "v")}, {}, past).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(store_->GrantLease(absl::Seconds(5), past).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  WatchRecorder rec;
  EXPECT_EQ(store_->Watch(prefix_, 0, rec.Callback(), past).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(absl::IsNotFound(store_->Get(Key("k"), Deadline()).status()));
}

TEST_P(MetaStoreContractTest, InvalidArguments) {
  EXPECT_TRUE(absl::IsInvalidArgument(store_->Put("", "v", Deadline()).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(store_->GrantLease(absl::ZeroDuration(), Deadline()).status()));
  EXPECT_TRUE(absl::IsNotFound(store_->Put(Key("k"), "v", Deadline(), 987654321).status()));
}

INSTANTIATE_TEST_SUITE_P(Stores, MetaStoreContractTest, ::testing::Values("embedded", "etcd"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kf::meta
