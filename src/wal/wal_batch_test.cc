// Wal::AppendBatch: every request gets what its own Append would have given, in request order,
// whether it went through the sequencer in a run of ordinary messages or alone.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/errors.h"
#include "gtest/gtest.h"
#include "message/builders.h"
#include "storage/tso/timestamp_allocator.h"
#include "trace/testing/scoped_in_memory_tracing.h"
#include "wal/collections/test_messages.h"
#include "wal/testing/memory_backend.h"
#include "wal/wal.h"

namespace kf::wal {
namespace {

using testing::MemoryWalBackend;

constexpr char kVc[] = "kf-dml_0_v";

MutableMessage Raw(std::string payload, std::string ik = "") {
  MutableMessage m(MessageType::kInsert, std::move(payload));
  m.set_vchannel(kVc);
  if (!ik.empty()) m.set_idempotency_key(std::move(ik));
  return m;
}

// Collects the results of one AppendBatch.
class Batch {
 public:
  void Add(MutableMessage m) {
    const size_t i = results_.size();
    results_.emplace_back(absl::UnknownError("pending"));
    done_.push_back(std::make_unique<absl::Notification>());
    requests_.push_back({.ctx = {}, .msg = std::move(m), .done = [this, i](auto r) {
                           results_[i] = std::move(r);
                           done_[i]->Notify();
                         }});
  }
  // Appends every request added (AppendBatch returns once they are enqueued).
  void Submit(Wal& wal) { wal.AppendBatch(std::move(requests_)); }
  // Waits for every result.
  const std::vector<absl::StatusOr<AppendResult>>& Wait() {
    for (auto& d : done_) d->WaitForNotification();
    return results_;
  }
  const std::vector<absl::StatusOr<AppendResult>>& Run(Wal& wal) {
    Submit(wal);
    return Wait();
  }

 private:
  std::vector<AppendRequest> requests_;
  std::vector<absl::StatusOr<AppendResult>> results_;
  std::vector<std::unique_ptr<absl::Notification>> done_;
};

class WalBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kf-walbatch-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    tso_ = *TimestampAllocator::Open((dir_ / "tso").string(), {});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Wal> Open(std::unique_ptr<MemoryWalBackend> b) {
    auto wal = OpenWal({.tso = tso_.get(),
                        .timetick_interval = absl::Hours(1),
                        .initial_backoff = absl::Microseconds(1)},
                       std::move(b));
    EXPECT_TRUE(wal.ok()) << wal.status();
    return std::move(*wal);
  }

  // The stored messages' payloads, in WAL order.
  static std::vector<std::string> Stored(const MemoryWalBackend& b) {
    std::vector<std::string> out;
    for (auto& e : b.DurableEntries()) out.push_back(MutableMessage::Decode(e)->payload());
    return out;
  }

  std::filesystem::path dir_;
  std::unique_ptr<TimestampAllocator> tso_;
  trace::testing::ScopedInMemoryTracing tracing_;
};

TEST_F(WalBatchTest, EachRequestGetsWhatItsOwnAppendWouldInRequestOrder) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0");
  auto* b = backend.get();
  auto wal = Open(std::move(backend));
  auto earlier = wal->AppendSync({}, Raw("earlier", "p:0"));
  ASSERT_TRUE(earlier.ok()) << earlier.status();

  Batch batch;
  batch.Add(Raw("a", "p:1"));
  batch.Add(Raw("a again", "p:1"));  // a retry of the request before it
  batch.Add(Raw("bad key", "nocolon"));
  batch.Add(Raw("earlier again", "p:0"));
  batch.Add(NewBeginTxnMessage(kVc, 1000));  // not batchable: appended alone, in its place
  batch.Add(Raw("b"));
  batch.Add(testing::Insert("kf-dml_0_42v1", 4));  // no such collection
  batch.Add(Raw("c", "p:2"));
  const auto& r = batch.Run(*wal);

  ASSERT_TRUE(r[0].ok()) << r[0].status();
  ASSERT_TRUE(r[1].ok()) << r[1].status();
  EXPECT_EQ(r[1]->id, r[0]->id);
  EXPECT_EQ(r[1]->timetick, r[0]->timetick);
  EXPECT_EQ(r[2].status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(r[3].ok()) << r[3].status();
  EXPECT_EQ(r[3]->id, earlier->id);
  ASSERT_TRUE(r[4].ok()) << r[4].status();
  ASSERT_TRUE(r[4]->txn.has_value());
  ASSERT_TRUE(r[5].ok()) << r[5].status();
  EXPECT_EQ(GetStreamingCode(r[6].status()), StreamingCode::kCollectionNotFound);
  ASSERT_TRUE(r[7].ok()) << r[7].status();
  // WAL order and timetick order are request order.
  const std::vector<const AppendResult*> appended = {&*earlier, &*r[0], &*r[4], &*r[5], &*r[7]};
  for (size_t i = 1; i < appended.size(); ++i) {
    EXPECT_LT(appended[i - 1]->id, appended[i]->id) << i;
    EXPECT_LT(appended[i - 1]->timetick, appended[i]->timetick) << i;
  }
  // The open txn's Begin is the LCMID of what follows it.
  EXPECT_EQ(r[5]->last_confirmed, r[4]->id);
  EXPECT_EQ(r[0]->last_confirmed, r[0]->id);
  EXPECT_EQ(Stored(*b), (std::vector<std::string>{"earlier", "a", "", "b", "c"}));
  // The run's `_ik` results were remembered.
  auto retry = wal->AppendSync({}, Raw("c once more", "p:2"));
  ASSERT_TRUE(retry.ok()) << retry.status();
  EXPECT_EQ(retry->id, r[7]->id);
  EXPECT_EQ(b->DurableEntries().size(), 5u);
}

TEST_F(WalBatchTest, WhatTheBackendRefusesIsRetriedAloneInOrder) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0");
  auto* b = backend.get();
  auto wal = Open(std::move(backend));
  b->FailNextAppends(2, absl::ResourceExhaustedError("queue full"));
  Batch batch;
  for (const char* p : {"a", "b", "c", "d"}) batch.Add(Raw(p));
  const auto& r = batch.Run(*wal);
  for (size_t i = 0; i < r.size(); ++i) {
    ASSERT_TRUE(r[i].ok()) << i << ": " << r[i].status();
    if (i > 0) {
      EXPECT_LT(r[i - 1]->timetick, r[i]->timetick);
    }
  }
  EXPECT_EQ(Stored(*b), (std::vector<std::string>{"a", "b", "c", "d"}));
  // docs/tracing.md §5: one wal.append per message, one wal.appendimpl per attempt. Only "a" was
  // offered to the backend before it refused; the rest of the run waited for it.
  std::map<std::string, int> impls_per_trace, failed_per_trace;
  for (const auto& s : tracing_.SpansNamed("wal.appendimpl")) {
    ++impls_per_trace[s.context.trace_id.ToHex()];
    if (s.status == trace::SpanStatusCode::kError) ++failed_per_trace[s.context.trace_id.ToHex()];
  }
  EXPECT_EQ(tracing_.SpansNamed("wal.append").size(), 4u);
  std::multiset<int> attempts;
  for (const auto& [trace, n] : impls_per_trace) attempts.insert(n);
  EXPECT_EQ(attempts, (std::multiset<int>{1, 1, 1, 3}));
  ASSERT_EQ(failed_per_trace.size(), 1u);
  EXPECT_EQ(failed_per_trace.begin()->second, 2);
}

// As alone: each message has max_append_attempts attempts (one span each), the run's included.
TEST_F(WalBatchTest, ARefusedRequestHasTheRetryBudgetOfItsOwnAppend) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0");
  auto* b = backend.get();
  auto wal = Open(std::move(backend));  // max_append_attempts 5
  b->FailNextAppends(5, absl::ResourceExhaustedError("queue full"));
  Batch batch;
  batch.Add(Raw("a"));
  batch.Add(Raw("b"));
  const auto& r = batch.Run(*wal);
  EXPECT_EQ(r[0].status().code(), absl::StatusCode::kResourceExhausted);  // 5 refusals
  ASSERT_TRUE(r[1].ok()) << r[1].status();
  EXPECT_EQ(Stored(*b), (std::vector<std::string>{"b"}));
  EXPECT_EQ(b->Attempts().size(), 6u);
  EXPECT_EQ(tracing_.SpansNamed("wal.appendimpl").size(), 6u);
  // The same refusals for one Append each.
  b->FailNextAppends(5, absl::ResourceExhaustedError("queue full"));
  EXPECT_EQ(wal->AppendSync({}, Raw("c")).status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(wal->AppendSync({}, Raw("d")).ok());
  EXPECT_EQ(b->Attempts().size(), 12u);
}

TEST_F(WalBatchTest, ARunThatFailsToBecomeDurableFailsEachRequestAmbiguously) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0", Term(1), /*auto_durable=*/false);
  auto* b = backend.get();
  auto wal = Open(std::move(backend));
  Batch batch;
  batch.Add(Raw("a", "p:1"));
  batch.Add(Raw("b", "p:2"));
  batch.Submit(*wal);
  ASSERT_EQ(b->Attempts().size(), 2u);  // one run, both enqueued
  b->FailPending(absl::InternalError("fdatasync: EIO"));
  const auto& r = batch.Wait();
  for (const auto& one : r) {
    EXPECT_EQ(GetStreamingCode(one.status()), StreamingCode::kTransport) << one.status();
  }
  EXPECT_EQ(wal->Health().code(), absl::StatusCode::kUnavailable);
  // The keys were released: a retry is told the WAL is broken, not made to wait.
  EXPECT_EQ(wal->AppendSync({}, Raw("a", "p:1")).status().code(), absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kf::wal
