// Focused tests of transactions through the WAL adaptor (docs/semantics.md §3) and of the
// consume-side tracing of docs/tracing.md §8 scenarios 11 and 12. The random interleavings live in
// wal_model_test.cc; these pin the acceptance statements one by one, step by step.
//
// The TSO runs on a fake clock the tests advance (txn expiry is a matter of timeticks), and the
// timetick loop is not started: the tests call SyncTimeTick themselves.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "common/errors.h"
#include "gtest/gtest.h"
#include "message/builders.h"
#include "message/message_trace.h"
#include "storage/tso/timestamp_allocator.h"
#include "trace/testing/scoped_in_memory_tracing.h"
#include "trace/tracer.h"
#include "wal/testing/memory_backend.h"
#include "wal/txn/txn_message.h"
#include "wal/wal_impl.h"

namespace kf::wal {
namespace {

using testing::MemoryWalBackend;

constexpr char kVcA[] = "kf-dml_0_txa";  // raw: DDL here is not checked against a collection
constexpr char kVcB[] = "kf-dml_0_txb";
constexpr int64_t kKeepaliveMs = 1000;

bool IsExpired(const absl::Status& s) {
  return s.code() == absl::StatusCode::kAborted &&
         GetStreamingCode(s) == StreamingCode::kTransactionExpired;
}
bool IsInvalidState(const absl::Status& s) {
  return s.code() == absl::StatusCode::kFailedPrecondition &&
         GetStreamingCode(s) == StreamingCode::kInvalidTransactionState;
}

MutableMessage Insert(std::string vc, std::string payload) {
  MutableMessage m(MessageType::kInsert, std::move(payload));
  m.set_vchannel(std::move(vc));
  return m;
}

MutableMessage Body(std::string vc, const kingfisher::v1::TxnContext& txn, std::string payload) {
  MutableMessage m = Insert(std::move(vc), std::move(payload));
  m.set_txn(txn);
  return m;
}

// One asynchronous append whose completion the test observes without waiting.
struct Pending {
  absl::Notification done;
  absl::StatusOr<AppendResult> result{absl::UnknownError("pending")};
};

class WalTxnAdaptorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("kf-wal-txn-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    TimestampAllocator::Options o;
    o.now_ms = [this] { return now_ms_.load(); };
    tso_ = *TimestampAllocator::Open((dir_ / "tso").string(), o);
  }
  void TearDown() override {
    if (manual_ != nullptr) manual_->MakeDurable(1 << 20);  // Close waits for in-flight appends
    if (wal_) wal_->Close();
    std::filesystem::remove_all(dir_);
  }

  // Opens the adaptor over `backend` without its timetick loop.
  void Open(std::unique_ptr<WalBackend> backend, WalOptions o = {}) {
    o.tso = tso_.get();
    o.pchannel = "kf-dml_0";
    wal_ = std::make_unique<WalImpl>(std::move(o), std::move(backend));
    ASSERT_TRUE(wal_->Recover().ok());
  }
  MemoryWalBackend* OpenMemory(bool auto_durable = true) {
    auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0", Term(1), auto_durable);
    MemoryWalBackend* b = backend.get();
    if (!auto_durable) manual_ = b;
    Open(std::move(backend));
    return b;
  }

  void Advance(uint64_t ms) { now_ms_ += ms; }

  std::shared_ptr<Pending> Submit(MutableMessage m) {
    auto p = std::make_shared<Pending>();
    wal_->Append({}, std::move(m), [p](absl::StatusOr<AppendResult> r) {
      p->result = std::move(r);
      p->done.Notify();
    });
    return p;
  }

  // Everything a reader delivers until nothing more is there (all appends are acknowledged,
  // so DEADLINE_EXCEEDED with a short deadline means the end). TimeTicks are dropped.
  static std::vector<ImmutableMessagePtr> Drain(Scanner& s) {
    std::vector<ImmutableMessagePtr> out;
    for (;;) {
      auto m = s.Next({}, absl::Now() + absl::Milliseconds(1));
      if (absl::IsDeadlineExceeded(m.status())) return out;
      EXPECT_TRUE(m.ok()) << m.status();
      if (!m.ok()) return out;
      if ((*m)->type() != MessageType::kTimeTick) out.push_back(*m);
    }
  }
  std::vector<ImmutableMessagePtr> ReadAll(const std::string& vchannel = "") {
    ScanOptions o;
    o.vchannel = vchannel;
    auto s = wal_->Read(o);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? Drain(**s) : std::vector<ImmutableMessagePtr>{};
  }

  static std::vector<MutableMessage> Stored(const MemoryWalBackend& b) {
    std::vector<MutableMessage> out;
    for (const auto& e : b.DurableEntries()) out.push_back(*MutableMessage::Decode(e));
    return out;
  }
  // The stored messages belonging to txn `id`.
  static std::vector<MessageType> StoredOfTxn(const MemoryWalBackend& b, int64_t id) {
    std::vector<MessageType> out;
    for (const auto& m : Stored(b)) {
      if (m.txn() && m.txn()->txn_id() == id) out.push_back(m.type());
    }
    return out;
  }

  std::filesystem::path dir_;
  std::atomic<uint64_t> now_ms_{1'700'000'000'000};
  std::unique_ptr<TimestampAllocator> tso_;
  std::unique_ptr<WalImpl> wal_;
  MemoryWalBackend* manual_ = nullptr;  // a backend whose entries the test makes durable
};

// --- expiry ---------------------------------------------------------------------------------

TEST_F(WalTxnAdaptorTest, BodyAfterTheKeepaliveExpiresTheTxnAndNothingMoreOfItIsAppended) {
  MemoryWalBackend* b = OpenMemory();
  auto tail = *wal_->Read({});  // a tailing reader, open from the start
  auto begin = wal_->AppendSync({}, NewBeginTxnMessage(kVcA, kKeepaliveMs));
  ASSERT_TRUE(begin.ok()) << begin.status();
  ASSERT_TRUE(begin->txn.has_value());
  const kingfisher::v1::TxnContext txn = *begin->txn;
  EXPECT_EQ(txn.keepalive_ms(), kKeepaliveMs);
  ASSERT_TRUE(wal_->AppendSync({}, Body(kVcA, txn, "b1")).ok());

  Advance(kKeepaliveMs + 1);  // the next timetick is past the last body + keepalive
  auto late = wal_->AppendSync({}, Body(kVcA, txn, "b2"));
  EXPECT_TRUE(IsExpired(late.status())) << late.status();
  // Once expired, always expired, and nothing more of it reaches the backend.
  EXPECT_TRUE(IsExpired(wal_->AppendSync({}, Body(kVcA, txn, "b3")).status()));
  EXPECT_TRUE(
      IsExpired(wal_->AppendSync({}, NewCommitTxnMessage(kVcA, TxnId(txn.txn_id()))).status()));
  EXPECT_TRUE(
      IsExpired(wal_->AppendSync({}, NewRollbackTxnMessage(kVcA, TxnId(txn.txn_id()))).status()));
  EXPECT_EQ(StoredOfTxn(*b, txn.txn_id()),
            (std::vector<MessageType>{MessageType::kBeginTxn, MessageType::kInsert}));
  EXPECT_EQ(b->Attempts().size(), 2u);  // rejected requests never reach the backend

  // An expired txn holds nothing back: a later message is its own LCMID.
  auto after = wal_->AppendSync({}, Insert(kVcA, "after"));
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->last_confirmed, after->id);

  // Consumers never see it: neither catch-up nor tailing readers.
  for (const auto& deliveries : {ReadAll(), Drain(*tail)}) {
    ASSERT_EQ(deliveries.size(), 1u);
    EXPECT_EQ(deliveries[0]->message().payload(), "after");
  }
}

TEST_F(WalTxnAdaptorTest, KeepaliveCountsFromTheLatestBody) {
  OpenMemory();
  auto begin = wal_->AppendSync({}, NewBeginTxnMessage(kVcA, kKeepaliveMs));
  ASSERT_TRUE(begin.ok());
  const kingfisher::v1::TxnContext txn = *begin->txn;
  for (int i = 0; i < 3; ++i) {
    Advance(kKeepaliveMs * 6 / 10);  // 1.8 keepalives in total, but never one between bodies
    ASSERT_TRUE(wal_->AppendSync({}, Body(kVcA, txn, "b" + std::to_string(i))).ok()) << i;
  }
  Advance(kKeepaliveMs * 6 / 10);
  ASSERT_TRUE(wal_->AppendSync({}, NewCommitTxnMessage(kVcA, TxnId(txn.txn_id()))).ok());
  auto got = ReadAll();
  ASSERT_EQ(got.size(), 1u);
  const TxnMessage* t = AsTxnMessage(*got[0]);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->inner().size(), 5u);  // Begin, 3 bodies, Commit
}

TEST_F(WalTxnAdaptorTest, AbandonedTxnIsExpiredByAPersistedTickAndStopsHoldingBackTheLcmid) {
  MemoryWalBackend* b = OpenMemory();
  auto begin = wal_->AppendSync({}, NewBeginTxnMessage(kVcA, kKeepaliveMs));
  ASSERT_TRUE(begin.ok());
  const int64_t id = begin->txn->txn_id();
  auto held = wal_->AppendSync({}, Insert(kVcB, "held"));
  ASSERT_TRUE(held.ok());
  EXPECT_EQ(held->last_confirmed, begin->id);  // the open txn holds the LCMID back

  Advance(kKeepaliveMs + 1);
  wal_->SyncTimeTick();  // appends since the last round: a persisted TimeTick
  EXPECT_EQ(wal_->txns().GetState(TxnId(id)), TxnManager::State::kExpired);
  auto free = wal_->AppendSync({}, Insert(kVcB, "free"));
  ASSERT_TRUE(free.ok());
  EXPECT_EQ(free->last_confirmed, free->id);
  EXPECT_TRUE(IsExpired(wal_->AppendSync({}, NewCommitTxnMessage(kVcA, TxnId(id))).status()));
  EXPECT_EQ(StoredOfTxn(*b, id), (std::vector<MessageType>{MessageType::kBeginTxn}));
  auto got = ReadAll();
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]->message().payload(), "held");
  EXPECT_EQ(got[1]->message().payload(), "free");
}

TEST_F(WalTxnAdaptorTest, AbandonedTxnIsExpiredByANonPersistedTickOnAnIdleChannel) {
  MemoryWalBackend* b = OpenMemory();
  auto begin = wal_->AppendSync({}, NewBeginTxnMessage(kVcA, kKeepaliveMs));
  ASSERT_TRUE(begin.ok());
  const int64_t id = begin->txn->txn_id();
  wal_->SyncTimeTick();  // persists a tick for the Begin; within the keepalive: nothing expires
  EXPECT_EQ(wal_->txns().GetState(TxnId(id)), TxnManager::State::kActive);
  const size_t stored = b->DurableEntries().size();

  Advance(kKeepaliveMs + 1);
  wal_->SyncTimeTick();  // idle: a non-persisted tick, still a watermark
  EXPECT_EQ(b->DurableEntries().size(), stored);
  EXPECT_EQ(wal_->txns().GetState(TxnId(id)), TxnManager::State::kExpired);
  auto next = wal_->AppendSync({}, Insert(kVcA, "next"));
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->last_confirmed, next->id);
  EXPECT_TRUE(IsExpired(wal_->AppendSync({}, Body(kVcA, *begin->txn, "late")).status()));
}

// --- exclusive messages ---------------------------------------------------------------------

// Acceptance: an exclusive message (e.g. DropCollection) on a vchannel with an open txn fails
// that txn; txns on other vchannels are unaffected.
TEST_F(WalTxnAdaptorTest, ExclusiveMessageFailsTheOpenTxnOfItsVchannelOnly) {
  MemoryWalBackend* b = OpenMemory();
  auto a = wal_->AppendSync({}, NewBeginTxnMessage(kVcA, kKeepaliveMs));
  auto bb = wal_->AppendSync({}, NewBeginTxnMessage(kVcB, kKeepaliveMs));
  ASSERT_TRUE(a.ok() && bb.ok());
  ASSERT_TRUE(wal_->AppendSync({}, Body(kVcA, *a->txn, "a1")).ok());
  ASSERT_TRUE(wal_->AppendSync({}, Body(kVcB, *bb->txn, "b1")).ok());

  auto drop = wal_->AppendSync({}, NewDropCollectionMessage(kVcA, 100));
  ASSERT_TRUE(drop.ok()) << drop.status();
  // A's Begin no longer holds the LCMID back; B's (begun later) does.
  EXPECT_EQ(drop->last_confirmed, bb->id);

  auto a2 = wal_->AppendSync({}, Body(kVcA, *a->txn, "a2"));
  EXPECT_TRUE(IsInvalidState(a2.status())) << a2.status();
  auto commit_a = wal_->AppendSync({}, NewCommitTxnMessage(kVcA, TxnId(a->txn->txn_id())));
  EXPECT_TRUE(IsInvalidState(commit_a.status())) << commit_a.status();
  auto commit_b = wal_->AppendSync({}, NewCommitTxnMessage(kVcB, TxnId(bb->txn->txn_id())));
  ASSERT_TRUE(commit_b.ok()) << commit_b.status();

  EXPECT_EQ(StoredOfTxn(*b, a->txn->txn_id()),
            (std::vector<MessageType>{MessageType::kBeginTxn, MessageType::kInsert}));
  for (const std::string& vc : {std::string(), std::string(kVcA), std::string(kVcB)}) {
    SCOPED_TRACE("reader vchannel '" + vc + "'");
    std::vector<MessageType> types;
    for (const auto& m : ReadAll(vc)) {
      types.push_back(m->type());
      if (const TxnMessage* t = AsTxnMessage(*m)) {
        EXPECT_EQ(t->message().txn()->txn_id(), bb->txn->txn_id());
        EXPECT_EQ(t->inner().size(), 3u);
      }
    }
    std::vector<MessageType> want;
    if (vc != kVcB) want.push_back(MessageType::kDropCollection);
    if (vc != kVcA) want.push_back(MessageType::kTxn);
    EXPECT_EQ(types, want);
  }
}

// Issue acceptance "bad input": each request fails with a clear error, appends nothing, and the
// WAL (and an unrelated txn) carries on.
TEST_F(WalTxnAdaptorTest, BadTxnRequestsFailClearlyAndLeaveTheWalUnharmed) {
  MemoryWalBackend* b = OpenMemory();
  auto begin = wal_->AppendSync({}, NewBeginTxnMessage(kVcA, kKeepaliveMs));
  ASSERT_TRUE(begin.ok()) << begin.status();
  const size_t stored_before = b->DurableEntries().size();

  // Commit of a txn never begun (an id above every timetick handed out).
  auto unknown = wal_->AppendSync({}, NewCommitTxnMessage(kVcA, TxnId(int64_t{1} << 62)));
  EXPECT_TRUE(IsInvalidState(unknown.status())) << unknown.status();
  // A txn spans one vchannel: a body on another is refused, the txn itself is unharmed.
  auto other_vc = wal_->AppendSync({}, Body(kVcB, *begin->txn, "elsewhere"));
  EXPECT_TRUE(IsInvalidState(other_vc.status())) << other_vc.status();
  // Begin with a negative keepalive.
  auto negative = wal_->AppendSync({}, NewBeginTxnMessage(kVcB, -5));
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument) << negative.status();
  // A commit without a transaction context.
  MutableMessage bare = NewCommitTxnMessage(kVcA, TxnId(begin->txn->txn_id()));
  bare.EraseProperty(prop::kTxn);
  auto no_ctx = wal_->AppendSync({}, std::move(bare));
  EXPECT_EQ(no_ctx.status().code(), absl::StatusCode::kInvalidArgument) << no_ctx.status();
  EXPECT_EQ(b->DurableEntries().size(), stored_before) << "a refused request was appended";

  ASSERT_TRUE(wal_->AppendSync({}, Body(kVcA, *begin->txn, "a1")).ok());
  auto commit = wal_->AppendSync({}, NewCommitTxnMessage(kVcA, TxnId(begin->txn->txn_id())));
  ASSERT_TRUE(commit.ok()) << commit.status();
  // Body after the commit.
  auto late = wal_->AppendSync({}, Body(kVcA, *begin->txn, "after-commit"));
  EXPECT_TRUE(IsInvalidState(late.status())) << late.status();
  ASSERT_TRUE(wal_->AppendSync({}, Insert(kVcA, "autocommit")).ok());

  std::vector<MessageType> types;
  for (const auto& m : ReadAll()) {
    types.push_back(m->type());
    if (const TxnMessage* t = AsTxnMessage(*m)) {
      EXPECT_EQ(t->inner().size(), 3u);
    }
  }
  EXPECT_EQ(types, (std::vector<MessageType>{MessageType::kTxn, MessageType::kInsert}));
}

// --- commit gate ----------------------------------------------------------------------------

TEST_F(WalTxnAdaptorTest, CommitIsAcknowledgedOnlyAfterItsBodiesAreDurable) {
  MemoryWalBackend* b = OpenMemory(/*auto_durable=*/false);
  auto begin = Submit(NewBeginTxnMessage(kVcA, kKeepaliveMs));
  b->MakeDurable(1);
  ASSERT_TRUE(begin->done.HasBeenNotified());
  ASSERT_TRUE(begin->result.ok()) << begin->result.status();
  const kingfisher::v1::TxnContext txn = *begin->result->txn;
  auto reader = *wal_->Read({});

  auto b1 = Submit(Body(kVcA, txn, "b1"));
  auto b2 = Submit(Body(kVcA, txn, "b2"));
  // Admitted while both bodies are in flight (the producer pipelines).
  auto commit = Submit(NewCommitTxnMessage(kVcA, TxnId(txn.txn_id())));
  EXPECT_FALSE(b1->done.HasBeenNotified());
  EXPECT_FALSE(b2->done.HasBeenNotified());
  EXPECT_FALSE(commit->done.HasBeenNotified());
  EXPECT_TRUE(Drain(*reader).empty());

  b->MakeDurable(1);
  ASSERT_TRUE(b1->done.HasBeenNotified());
  EXPECT_TRUE(b1->result.ok()) << b1->result.status();
  EXPECT_FALSE(b2->done.HasBeenNotified());
  EXPECT_FALSE(commit->done.HasBeenNotified());

  b->MakeDurable(1);
  ASSERT_TRUE(b2->done.HasBeenNotified());
  EXPECT_TRUE(b2->result.ok()) << b2->result.status();
  EXPECT_FALSE(commit->done.HasBeenNotified());
  EXPECT_TRUE(Drain(*reader).empty());  // no Txn before its commit is acknowledged

  b->MakeDurable(1);
  ASSERT_TRUE(commit->done.HasBeenNotified());
  ASSERT_TRUE(commit->result.ok()) << commit->result.status();
  EXPECT_GT(commit->result->id, b2->result->id);
  auto got = Drain(*reader);
  ASSERT_EQ(got.size(), 1u);
  const TxnMessage* t = AsTxnMessage(*got[0]);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->id(), commit->result->id);
  EXPECT_EQ(t->timetick(), commit->result->timetick);
  ASSERT_EQ(t->inner().size(), 4u);
  EXPECT_EQ(t->inner()[1]->message().payload(), "b1");
  EXPECT_EQ(t->inner()[2]->message().payload(), "b2");
}

// --- tracing (docs/tracing.md §5, §8) -----------------------------------------------------------

class WalTxnTracingTest : public WalTxnAdaptorTest {
 protected:
  // A source span started and ended by the test before the action (docs/tracing.md §8).
  std::pair<trace::Context, std::shared_ptr<trace::Span>> Source() {
    auto source = trace::WalTracer()->StartSpan({}, "wal.txn");
    source.second->End();
    return source;
  }
  static trace::SpanId TcSpan(const MutableMessage& m) {
    return ExtractTraceContext({}, m).span_context().span_id;
  }
  static trace::TraceId TcTrace(const MutableMessage& m) {
    return ExtractTraceContext({}, m).span_context().trace_id;
  }
  // Appends Begin, one body and Commit on kVcA, each carrying `source` in `_tc` (as the client's
  // wal.txn does); returns the Begin's result.
  AppendResult AppendTracedTxn(const trace::Context& source) {
    auto traced = [&](MutableMessage m) {
      InjectTraceContext(source, &m);
      return m;
    };
    auto begin = wal_->AppendSync(source, traced(NewBeginTxnMessage(kVcA, kKeepaliveMs)));
    EXPECT_TRUE(begin.ok()) << begin.status();
    EXPECT_TRUE(wal_->AppendSync(source, traced(Body(kVcA, *begin->txn, "b"))).ok());
    EXPECT_TRUE(
        wal_->AppendSync(source, traced(NewCommitTxnMessage(kVcA, TxnId(begin->txn->txn_id()))))
            .ok());
    return *begin;
  }

  trace::testing::ScopedInMemoryTracing tracing_;
};

// Scenario 11, literally: Begin tt100, body tt101, Commit tt102, then TimeTick tt103, persisted
// with the source's context and read by catch-up: exactly one wal.catchup_consume, child of the
// source, and the delivered Txn's `_tc` equals it; the TimeTick gets none.
TEST_F(WalTxnTracingTest, Scenario11CatchupGivesTheTxnOneConsumeSpanChildOfTheSource) {
  auto backend = std::make_unique<MemoryWalBackend>("kf-dml_0");
  auto [source_ctx, source] = Source();
  kingfisher::v1::TxnContext txn;
  txn.set_txn_id(100);
  txn.set_keepalive_ms(10'000);
  auto persist = [&, &source_ctx = source_ctx](MutableMessage m, uint64_t tt, bool self_lc) {
    m.set_timetick(TimeTick(tt));
    m.set_wal_term(Term(1));
    if (self_lc) {
      m.set_last_confirmed_self();
    } else {
      m.set_last_confirmed(MessageId::Local(0));  // the Begin, open until the commit
    }
    InjectTraceContext(source_ctx, &m);
    ASSERT_TRUE(backend->Append(m.Encode(), [](absl::Status s) { ASSERT_TRUE(s.ok()); }).ok());
  };
  MutableMessage begin = NewBeginTxnMessage(kVcA, 10'000);
  begin.set_txn(txn);
  persist(std::move(begin), 100, true);
  persist(Body(kVcA, txn, "b"), 101, false);
  persist(NewCommitTxnMessage(kVcA, TxnId(100)), 102, true);
  persist(NewTimeTickMessage(TimeTick(103)), 103, true);
  Open(std::move(backend));

  auto scanner = *wal_->Read({});
  std::vector<ImmutableMessagePtr> got;
  for (;;) {
    auto m = scanner->Next({}, absl::Now() + absl::Milliseconds(1));
    if (absl::IsDeadlineExceeded(m.status())) break;
    ASSERT_TRUE(m.ok()) << m.status();
    got.push_back(*m);
  }
  ASSERT_EQ(got.size(), 2u);
  const TxnMessage* t = AsTxnMessage(*got[0]);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->timetick(), TimeTick(102));
  EXPECT_EQ(t->inner().size(), 3u);
  EXPECT_EQ(got[1]->type(), MessageType::kTimeTick);
  EXPECT_EQ(got[1]->timetick(), TimeTick(103));
  EXPECT_FALSE(got[1]->message().HasProperty(prop::kTraceContext));

  auto consume = tracing_.SpansNamed("wal.catchup_consume");
  ASSERT_EQ(consume.size(), 1u);
  EXPECT_EQ(consume[0].parent_span_id, source->context().span_id);
  EXPECT_EQ(consume[0].context.trace_id, source->context().trace_id);
  EXPECT_EQ(consume[0].kind, trace::SpanKind::kConsumer);
  EXPECT_EQ(TcSpan(t->message()), consume[0].context.span_id);
  EXPECT_EQ(TcTrace(t->message()), source->context().trace_id);
}

// Scenario 11 through the adaptor: appended by one WAL instance, read by the next one after a
// restart (so the read is catch-up). The persisted `_tc` is the Commit's wal.appendimpl; the
// one consume span hangs under it, in the source's trace.
TEST_F(WalTxnTracingTest, Scenario11AfterARestartTheTxnHasOneConsumeSpanUnderItsCommit) {
  auto root = std::make_unique<MemoryWalBackend>("kf-dml_0");
  Open(root->Reopen(Term(1)));
  auto [source_ctx, source] = Source();
  AppendTracedTxn(source_ctx);
  wal_->Close();
  std::vector<MutableMessage> stored = Stored(*root);
  ASSERT_EQ(stored.size(), 3u);
  const trace::SpanId commit_impl = TcSpan(stored[2]);
  bool found = false;
  for (const auto& s : tracing_.SpansNamed("wal.appendimpl")) {
    found = found || s.context.span_id == commit_impl;
  }
  EXPECT_TRUE(found) << "the persisted `_tc` of the Commit is its wal.appendimpl span";

  tracing_.Reset();
  Open(root->Reopen(Term(2)));
  auto got = ReadAll();
  ASSERT_EQ(got.size(), 1u);
  ASSERT_NE(AsTxnMessage(*got[0]), nullptr);
  auto consume = tracing_.SpansNamed("wal.catchup_consume");
  ASSERT_EQ(consume.size(), 1u);
  EXPECT_EQ(consume[0].parent_span_id, commit_impl);
  EXPECT_EQ(consume[0].context.trace_id, source->context().trace_id);
  EXPECT_EQ(TcSpan(got[0]->message()), consume[0].context.span_id);
}

// Scenario 12: tailing readers open no consume span and mutate nothing: the delivered `_tc` is
// the appendimpl span that was persisted, on the one shared object every reader gets (for a
// Txn: the same Begin, bodies and Commit objects inside each reader's own assembly).
TEST_F(WalTxnTracingTest, Scenario12TailingReadersShareTheMessageAndOpenNoConsumeSpan) {
  MemoryWalBackend* b = OpenMemory();
  ASSERT_TRUE(wal_->AppendSync({}, Insert(kVcB, "warm")).ok());  // the buffer covers "latest"
  ScanOptions latest;
  latest.policy.kind = DeliverPolicy::Kind::kLatest;
  auto r1 = *wal_->Read(latest);
  auto r2 = *wal_->Read(latest);

  auto [source_ctx, source] = Source();
  const AppendResult begin = AppendTracedTxn(source_ctx);
  MutableMessage plain = Insert(kVcB, "plain");
  InjectTraceContext(source_ctx, &plain);
  ASSERT_TRUE(wal_->AppendSync(source_ctx, std::move(plain)).ok());

  auto d1 = Drain(*r1);
  auto d2 = Drain(*r2);
  ASSERT_EQ(d1.size(), 2u);
  ASSERT_EQ(d2.size(), 2u);
  EXPECT_TRUE(tracing_.SpansNamed("wal.catchup_consume").empty());

  std::vector<MutableMessage> stored = Stored(*b);
  ASSERT_EQ(stored.size(), 5u);
  const MutableMessage& stored_commit = stored[3];
  const MutableMessage& stored_plain = stored[4];
  ASSERT_EQ(stored_commit.type(), MessageType::kCommitTxn);
  std::vector<trace::SpanId> impls;
  for (const auto& s : tracing_.SpansNamed("wal.appendimpl")) {
    if (s.context.trace_id == source->context().trace_id) impls.push_back(s.context.span_id);
  }
  auto is_impl = [&](const trace::SpanId& id) {
    return std::find(impls.begin(), impls.end(), id) != impls.end();
  };

  for (const auto* d : {&d1, &d2}) {
    const TxnMessage* t = AsTxnMessage(*(*d)[0]);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(TcSpan(t->message()), TcSpan(stored_commit));
    EXPECT_TRUE(is_impl(TcSpan(t->message())));
    EXPECT_EQ(TcSpan((*d)[1]->message()), TcSpan(stored_plain));
    EXPECT_TRUE(is_impl(TcSpan((*d)[1]->message())));
  }
  EXPECT_EQ(d1[1].get(), d2[1].get()) << "tailing readers share the buffer's message";
  const TxnMessage* t1 = AsTxnMessage(*d1[0]);
  const TxnMessage* t2 = AsTxnMessage(*d2[0]);
  ASSERT_EQ(t1->inner().size(), 3u);
  ASSERT_EQ(t2->inner().size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(t1->inner()[i].get(), t2->inner()[i].get()) << i;
}

}  // namespace
}  // namespace kf::wal
