// The collection rules through the WAL adaptor (docs/ddl-node.md), over the memory and the
// local backend: what is rejected writes nothing, nothing lands after a DropCollection even
// under racing inserts, and a reopened WAL rebuilds the rules' state and the broadcast dedupe
// from its log.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "gtest/gtest.h"
#include "message/builders.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/backends/testing/backend_under_test.h"
#include "wal/collections/test_messages.h"
#include "wal/testing/memory_backend.h"
#include "wal/wal_impl.h"

namespace kf::wal {
namespace {

using namespace kf::wal::testing;  // NOLINT: the message builders
using State = CollectionTable::State;

constexpr char kPchannel[] = "kf-dml_0";
constexpr char kVc[] = "kf-dml_0_42v1";
constexpr char kRaw[] = "kf-dml_0_orders";

using testing::BackendKind;
using testing::BackendUnderTest;

bool IsCode(const absl::StatusOr<AppendResult>& r, StreamingCode code) {
  return !r.ok() && r.status().code() == ToStatusCode(code) && GetStreamingCode(r.status()) == code;
}

class WalCollectionsTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = c == '/' ? '_' : c;
    dir_ = std::filesystem::temp_directory_path() /
           ("kf-walcoll-" + std::to_string(::getpid()) + "-" + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    tso_ = *TimestampAllocator::Open((dir_ / "tso").string(), {});
    log_ = std::make_unique<BackendUnderTest>(GetParam(), dir_, kPchannel);
    Reopen();
  }
  void TearDown() override {
    if (wal_) wal_->Close();
    wal_.reset();
    std::filesystem::remove_all(dir_);
  }

  // A restart of the pchannel's owner: a new WalImpl over the same log at a higher term. The
  // short default tail makes the local backend find old DDL by the type-filtered full scan.
  void Reopen(uint64_t recovery_scan_bytes = 1024) {
    if (wal_) wal_->Close();
    wal_.reset();
    term_ = Term(term_.value() + 1);
    auto backend = log_->Open(term_);
    ASSERT_TRUE(backend.ok()) << backend.status();
    wal_ = std::make_unique<WalImpl>(
        WalOptions{
            .pchannel = kPchannel, .tso = tso_.get(), .recovery_scan_bytes = recovery_scan_bytes},
        *std::move(backend));
    ASSERT_TRUE(wal_->Recover().ok());
  }

  absl::StatusOr<AppendResult> Append(MutableMessage m) {
    return wal_->AppendSync({}, std::move(m));
  }

  // Every persisted message of the log, in WAL order (TimeTicks left out).
  std::vector<ImmutableMessagePtr> Log() {
    auto scanner = *wal_->Read({});
    std::vector<ImmutableMessagePtr> out;
    for (;;) {
      auto m = scanner->Next({}, absl::Now() + absl::Milliseconds(100));
      if (!m.ok()) break;
      if ((*m)->type() != MessageType::kTimeTick) out.push_back(*m);
    }
    return out;
  }

  std::filesystem::path dir_;
  std::unique_ptr<TimestampAllocator> tso_;
  std::unique_ptr<BackendUnderTest> log_;
  Term term_{0};
  std::unique_ptr<WalImpl> wal_;
};

TEST_P(WalCollectionsTest, InsertsNeedTheCollectionAndItsDim) {
  EXPECT_TRUE(IsCode(Append(Insert(kVc, 4)), StreamingCode::kCollectionNotFound));
  ASSERT_TRUE(Append(CreateCollection(kVc, 42, 4, 1)).ok());
  EXPECT_TRUE(Append(Insert(kVc, 4)).ok());
  EXPECT_TRUE(IsCode(Append(Insert(kVc, 3)), StreamingCode::kInvalidArgument));
  EXPECT_TRUE(IsCode(Append(Insert(kVc, 4, 1, "p")), StreamingCode::kCollectionNotFound));
  ASSERT_TRUE(Append(DropCollection(kVc, 42, 2)).ok());
  EXPECT_TRUE(IsCode(Append(Insert(kVc, 4)), StreamingCode::kCollectionNotFound));
  EXPECT_TRUE(IsCode(Append(NewDeleteMessage(kVc, {})), StreamingCode::kCollectionNotFound));
  // Nothing rejected was written.
  std::vector<MessageType> types;
  for (const auto& m : Log()) types.push_back(m->type());
  EXPECT_EQ(types, (std::vector<MessageType>{MessageType::kCreateCollection, MessageType::kInsert,
                                             MessageType::kDropCollection}));
}

TEST_P(WalCollectionsTest, BadPayloadsAreRejectedAndNothingIsWritten) {
  ASSERT_TRUE(Append(CreateCollection(kVc, 42, 4, 1)).ok());
  MutableMessage garbage(MessageType::kInsert, "\xff\xff");
  garbage.set_vchannel(kVc);
  EXPECT_TRUE(IsCode(Append(garbage), StreamingCode::kInvalidArgument));
  MutableMessage bad_drop(MessageType::kDropCollection, "\x08");
  bad_drop.set_vchannel(kVc);
  EXPECT_TRUE(IsCode(Append(Broadcast(bad_drop, 2)), StreamingCode::kInvalidArgument));
  EXPECT_TRUE(IsCode(Append(DropCollection(kVc, 41, 3)), StreamingCode::kInvalidArgument));
  EXPECT_EQ(Log().size(), 1u);
  EXPECT_EQ(wal_->collection_state(kVc), State::kCreated);
}

TEST_P(WalCollectionsTest, RawVChannelsAreNotChecked) {
  MutableMessage opaque(MessageType::kInsert, "anything at all");
  opaque.set_vchannel(kRaw);
  EXPECT_TRUE(Append(opaque).ok());
  EXPECT_TRUE(Append(Insert(kRaw, 7)).ok());
  EXPECT_TRUE(Append(DropCollection(kRaw, 42, 1)).ok());
  EXPECT_TRUE(Append(opaque).ok());  // a "drop" on a raw vchannel is just a message
  EXPECT_EQ(wal_->collection_state(kRaw), State::kUnknown);
}

TEST_P(WalCollectionsTest, BroadcastRetriesGetTheOriginalResult) {
  auto create = Append(CreateCollection(kVc, 42, 4, 7));
  ASSERT_TRUE(create.ok()) << create.status();
  auto again = Append(CreateCollection(kVc, 42, 4, 7));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->id, create->id);
  EXPECT_EQ(again->timetick, create->timetick);
  // The same broadcast id on another vchannel is another copy, appended there.
  EXPECT_TRUE(Append(CreateCollection("kf-dml_0_42v0", 42, 4, 7)).ok());
  // Another broadcast creating it again is a conflict, not a retry.
  EXPECT_TRUE(IsCode(Append(CreateCollection(kVc, 42, 4, 8)), StreamingCode::kCollectionExists));
  EXPECT_EQ(Log().size(), 2u);
}

// A copy refused for its malformed `_ik` leaves no broadcast state behind: the broadcaster's
// retry is appended, not made to wait for an original that never was.
TEST_P(WalCollectionsTest, BroadcastCopyWithABadIdempotencyKeyLeavesNoTrace) {
  MutableMessage bad = CreateCollection(kVc, 42, 4, 7);
  bad.set_idempotency_key("nocolon");
  EXPECT_TRUE(IsCode(Append(std::move(bad)), StreamingCode::kInvalidArgument));
  auto retry = std::make_shared<std::promise<absl::StatusOr<AppendResult>>>();
  auto answered = retry->get_future();
  wal_->Append({}, CreateCollection(kVc, 42, 4, 7), [retry](auto r) { retry->set_value(r); });
  ASSERT_EQ(answered.wait_for(std::chrono::seconds(30)), std::future_status::ready)
      << "the retry waits for the refused copy";
  EXPECT_TRUE(answered.get().ok());
  EXPECT_EQ(Log().size(), 1u);
}

TEST_P(WalCollectionsTest, ReopenRebuildsStateAndBroadcastDedupe) {
  const std::string other = "kf-dml_0_43v0";
  ASSERT_TRUE(Append(CreateCollection(kVc, 42, 4, 1)).ok());
  ASSERT_TRUE(Append(CreateCollection(other, 43, 8, 2)).ok());
  ASSERT_TRUE(Append(PartitionDdl(MessageType::kCreatePartition, kVc, 42, "p", 3)).ok());
  ASSERT_TRUE(Append(Insert(kVc, 4, 1, "p")).ok());
  auto drop = Append(DropCollection(other, 43, 4));
  ASSERT_TRUE(drop.ok());
  // Enough inserts that the DDL is far from the log's tail.
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(Append(Insert(kVc, 4, i)).ok());
  const size_t logged = Log().size();

  Reopen();
  EXPECT_EQ(wal_->collection_state(kVc), State::kCreated);
  EXPECT_EQ(wal_->collection_state(other), State::kDropped);
  EXPECT_TRUE(Append(Insert(kVc, 4, 1, "p")).ok());
  EXPECT_TRUE(IsCode(Append(Insert(kVc, 5)), StreamingCode::kInvalidArgument));
  EXPECT_TRUE(IsCode(Append(Insert(other, 8)), StreamingCode::kCollectionNotFound));
  // The coordinator restarted too and retries its broadcasts: nothing is appended twice.
  auto retried = Append(DropCollection(other, 43, 4));
  ASSERT_TRUE(retried.ok()) << retried.status();
  EXPECT_EQ(retried->id, drop->id);
  EXPECT_EQ(retried->timetick, drop->timetick);
  EXPECT_TRUE(Append(CreateCollection(kVc, 42, 4, 1)).ok());
  EXPECT_EQ(Log().size(), logged + 1);  // the one Insert
}

TEST_P(WalCollectionsTest, NothingLandsAfterTheDropUnderRacingInserts) {
  ASSERT_TRUE(Append(CreateCollection(kVc, 42, 4, 1)).ok());
  std::atomic<int> acked{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < 6; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; !stop.load(); ++i) {
        auto r = Append(Insert(kVc, 4, t * 1000000 + i));
        if (r.ok()) {
          acked.fetch_add(1);
          continue;
        }
        EXPECT_TRUE(IsCode(r, StreamingCode::kCollectionNotFound)) << r.status();
        return;  // rejected once: the drop is in
      }
    });
  }
  while (acked.load() < 200) std::this_thread::yield();
  auto drop = Append(DropCollection(kVc, 42, 2));
  stop.store(true);
  for (auto& w : writers) w.join();
  ASSERT_TRUE(drop.ok()) << drop.status();

  bool dropped = false;
  int inserts = 0;
  for (const auto& m : Log()) {
    if (m->vchannel() != kVc) continue;
    if (m->type() == MessageType::kDropCollection) {
      EXPECT_EQ(m->id(), drop->id);
      dropped = true;
      continue;
    }
    EXPECT_FALSE(dropped) << MessageTypeName(m->type()) << " at " << m->id().ToText()
                          << " after the DropCollection";
    if (m->type() == MessageType::kInsert) ++inserts;
  }
  EXPECT_TRUE(dropped);
  EXPECT_EQ(inserts, acked.load());  // every acknowledged insert, nothing else
}

TEST_P(WalCollectionsTest, TransactionsOnADroppedCollection) {
  ASSERT_TRUE(Append(CreateCollection(kVc, 42, 4, 1)).ok());
  auto begin = Append(NewBeginTxnMessage(kVc, 60000));
  ASSERT_TRUE(begin.ok());
  const TxnId txn(begin->txn->txn_id());
  MutableMessage body = Insert(kVc, 4);
  body.set_txn(*begin->txn);
  ASSERT_TRUE(Append(body).ok());
  // The drop fails the open txn (exclusive), and nothing of it is appended afterwards.
  ASSERT_TRUE(Append(DropCollection(kVc, 42, 2)).ok());
  MutableMessage late = Insert(kVc, 4, 2);
  late.set_txn(*begin->txn);
  EXPECT_TRUE(IsCode(Append(late), StreamingCode::kCollectionNotFound));
  EXPECT_TRUE(IsCode(Append(NewCommitTxnMessage(kVc, txn)), StreamingCode::kCollectionNotFound));
  EXPECT_TRUE(IsCode(Append(NewBeginTxnMessage(kVc, 1000)), StreamingCode::kCollectionNotFound));
  EXPECT_EQ(Log().back()->type(), MessageType::kDropCollection);
}

// Not a timed assertion: prints what an open costs (docs/ddl-node.md), with the DDL at the
// log's head so that only the type-filtered full scan finds it.
TEST_P(WalCollectionsTest, OpenCostIsPrinted) {
  ASSERT_TRUE(Append(CreateCollection(kVc, 42, 4, 1)).ok());
  constexpr int kEntries = 20000;
  std::vector<std::future<absl::StatusOr<AppendResult>>> acks;
  const std::string kilobyte(1024, 'x');
  for (int i = 0; i < kEntries; ++i) {
    auto done = std::make_shared<std::promise<absl::StatusOr<AppendResult>>>();
    acks.push_back(done->get_future());
    MutableMessage m(MessageType::kInsert, kilobyte);
    m.set_vchannel(kRaw);
    wal_->Append({}, std::move(m),
                 [done](absl::StatusOr<AppendResult> r) { done->set_value(std::move(r)); });
  }
  for (auto& a : acks) ASSERT_TRUE(a.get().ok());
  // Each window twice: the first open may also pay for a cold cache.
  for (uint64_t tail : {uint64_t{1024}, uint64_t{64} << 20, uint64_t{1024}, uint64_t{64} << 20}) {
    wal_->Close();
    wal_.reset();
    const absl::Time start = absl::Now();
    Reopen(tail);
    const double ms = absl::ToDoubleMilliseconds(absl::Now() - start);
    std::printf("open of %d x 1 KiB entries (%s backend, tail window %llu B): %.1f ms, %.0f MB/s\n",
                kEntries + 1, testing::BackendName(GetParam()).c_str(),
                static_cast<unsigned long long>(tail), ms, kEntries * 1.1e-3 / (ms / 1e3));
    EXPECT_EQ(wal_->collection_state(kVc), State::kCreated);
  }
}

TEST(WalCollectionsDedupeTest, ARetryOfAnInFlightBroadcastWaitsForTheOriginal) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kf-walcoll-inflight-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto tso = *TimestampAllocator::Open((dir / "tso").string(), {});
  auto backend = std::make_unique<MemoryWalBackend>(kPchannel, Term(1), /*auto_durable=*/false);
  MemoryWalBackend* b = backend.get();
  WalOptions o;
  o.tso = tso.get();
  auto wal = std::make_unique<WalImpl>(std::move(o), std::move(backend));
  ASSERT_TRUE(wal->Recover().ok());
  std::promise<absl::StatusOr<AppendResult>> first, second;
  wal->Append({}, CreateCollection(kVc, 42, 4, 5),
              [&](absl::StatusOr<AppendResult> r) { first.set_value(std::move(r)); });
  wal->Append({}, CreateCollection(kVc, 42, 4, 5),
              [&](absl::StatusOr<AppendResult> r) { second.set_value(std::move(r)); });
  EXPECT_EQ(b->Attempts().size(), 1u);
  b->MakeDurable(1);
  auto r1 = first.get_future().get(), r2 = second.get_future().get();
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->id, r2->id);
  wal->Close();
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Backends, WalCollectionsTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal,
                                           BackendKind::kObjectStore, BackendKind::kQuorum),
                         [](const auto& info) { return testing::BackendName(info.param); });

}  // namespace
}  // namespace kf::wal
