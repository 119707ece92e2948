#include "wal/txn/txn_manager.h"

#include <optional>
#include <vector>

#include "common/errors.h"
#include "gtest/gtest.h"
#include "wal/txn/txn_keepalive.h"

namespace kf::wal {
namespace {

using State = TxnManager::State;

// One millisecond of keepalive in timetick units.
constexpr uint64_t kMs = uint64_t{1} << kLogicalBits;

TimeTick Tt(uint64_t v) { return TimeTick(v); }

// Records what a CommitGate was called with.
struct GateProbe {
  int calls = 0;
  absl::Status status = absl::UnknownError("not called");
  CommitGate Gate() {
    return [this](absl::Status s) {
      ++calls;
      status = std::move(s);
    };
  }
};

class TxnManagerTest : public ::testing::Test {
 protected:
  // Begins a txn on `vc` at `tt` with a 1 ms keepalive and records its Begin id.
  TxnId Begin(TimeTick tt, std::string_view vc = "v1", int64_t keepalive_ms = 1) {
    auto ctx = m_.BeginTxn(vc, keepalive_ms, tt);
    EXPECT_TRUE(ctx.ok()) << ctx.status();
    TxnId id(ctx->txn_id());
    m_.SetBeginId(id, MessageId::Local(tt.value()));
    return id;
  }
  TxnManager m_;
};

StreamingCode CodeOf(const absl::Status& s) { return GetStreamingCode(s); }

TEST_F(TxnManagerTest, BeginAllocatesTheBeginTimetickAndDefaultsKeepalive) {
  auto ctx = m_.BeginTxn("v1", 0, Tt(100));
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  EXPECT_EQ(ctx->txn_id(), 100);
  EXPECT_EQ(ctx->keepalive_ms(), kDefaultTxnKeepaliveMs);
  EXPECT_EQ(m_.GetState(TxnId(100)), State::kActive);
  auto explicit_ctx = m_.BeginTxn("v1", 250, Tt(101));
  ASSERT_TRUE(explicit_ctx.ok());
  EXPECT_EQ(explicit_ctx->keepalive_ms(), 250);
}

TEST_F(TxnManagerTest, BeginRejectsNegativeKeepaliveAndMissingVChannel) {
  auto neg = m_.BeginTxn("v1", -1, Tt(100));
  EXPECT_EQ(neg.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(neg.status().message().find("keepalive"), std::string_view::npos);
  EXPECT_EQ(m_.BeginTxn("", 0, Tt(101)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(m_.LiveCount(), 0u);
}

TEST_F(TxnManagerTest, BeginWithARepeatedTimetickIsAnInternalError) {
  Begin(Tt(100));
  EXPECT_EQ(m_.BeginTxn("v1", 0, Tt(100)).status().code(), absl::StatusCode::kInternal);
}

TEST_F(TxnManagerTest, UnknownTxnOfAnEarlierOwnerIsExpiredNotInvalid) {
  m_.SetOpenedAfter(Tt(100));
  // Begun at 90 by the previous owner: it died with it; the client retries the whole txn.
  EXPECT_EQ(CodeOf(m_.AddBody(TxnId(Tt(90).value()), "v1", Tt(120))),
            StreamingCode::kTransactionExpired);
  EXPECT_EQ(CodeOf(m_.Commit(TxnId(Tt(90).value()), "v1", Tt(121), [](absl::Status) {})),
            StreamingCode::kTransactionExpired);
  // Never begun anywhere: a client bug.
  EXPECT_EQ(CodeOf(m_.AddBody(TxnId(Tt(110).value()), "v1", Tt(122))),
            StreamingCode::kInvalidTransactionState);
}

TEST_F(TxnManagerTest, BodyWithinKeepaliveExtendsTheDeadline) {
  TxnId id = Begin(Tt(100));
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(100 + kMs)).ok());      // exactly at the deadline: in time
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(100 + 2 * kMs)).ok());  // measured from the last body
  EXPECT_EQ(m_.GetState(id), State::kActive);
}

TEST_F(TxnManagerTest, BodyAfterKeepaliveExpiresAndStaysExpired) {
  TxnId id = Begin(Tt(100));
  absl::Status late = m_.AddBody(id, "v1", Tt(100 + kMs + 1));
  EXPECT_EQ(CodeOf(late), StreamingCode::kTransactionExpired);
  EXPECT_EQ(late.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(m_.GetState(id), State::kExpired);
  EXPECT_EQ(CodeOf(m_.AddBody(id, "v1", Tt(100 + kMs + 2))), StreamingCode::kTransactionExpired);
  GateProbe gate;
  EXPECT_EQ(CodeOf(m_.Commit(id, "v1", Tt(100 + kMs + 3), gate.Gate())),
            StreamingCode::kTransactionExpired);
  EXPECT_EQ(gate.calls, 0);
  EXPECT_EQ(CodeOf(m_.Rollback(id, "v1", Tt(100 + kMs + 4))), StreamingCode::kTransactionExpired);
  EXPECT_FALSE(m_.EarliestActiveBegin().has_value());
}

TEST_F(TxnManagerTest, CommitAfterKeepaliveExpires) {
  TxnId id = Begin(Tt(100));
  GateProbe gate;
  EXPECT_EQ(CodeOf(m_.Commit(id, "v1", Tt(100 + kMs + 1), gate.Gate())),
            StreamingCode::kTransactionExpired);
  EXPECT_EQ(gate.calls, 0);
  EXPECT_EQ(m_.GetState(id), State::kExpired);
}

TEST_F(TxnManagerTest, RollbackAfterKeepaliveExpires) {
  TxnId id = Begin(Tt(100));
  EXPECT_EQ(CodeOf(m_.Rollback(id, "v1", Tt(100 + kMs + 1))), StreamingCode::kTransactionExpired);
  EXPECT_EQ(m_.GetState(id), State::kExpired);
}

TEST_F(TxnManagerTest, UnknownTxnIsInvalidState) {
  GateProbe gate;
  absl::Status s = m_.Commit(TxnId(7), "v1", Tt(100), gate.Gate());
  EXPECT_EQ(CodeOf(s), StreamingCode::kInvalidTransactionState);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("unknown"), std::string_view::npos);
  EXPECT_EQ(CodeOf(m_.AddBody(TxnId(7), "v1", Tt(101))), StreamingCode::kInvalidTransactionState);
  EXPECT_EQ(CodeOf(m_.Rollback(TxnId(7), "v1", Tt(102))), StreamingCode::kInvalidTransactionState);
  EXPECT_EQ(gate.calls, 0);
}

TEST_F(TxnManagerTest, OtherVChannelIsRejectedAndTheTxnIsUnharmed) {
  TxnId id = Begin(Tt(100));
  absl::Status s = m_.AddBody(id, "v2", Tt(101));
  EXPECT_EQ(CodeOf(s), StreamingCode::kInvalidTransactionState);
  EXPECT_NE(s.message().find("one vchannel"), std::string_view::npos);
  GateProbe gate;
  EXPECT_EQ(CodeOf(m_.Commit(id, "v2", Tt(102), gate.Gate())),
            StreamingCode::kInvalidTransactionState);
  EXPECT_EQ(CodeOf(m_.Rollback(id, "v2", Tt(103))), StreamingCode::kInvalidTransactionState);
  EXPECT_EQ(m_.GetState(id), State::kActive);
  EXPECT_TRUE(m_.AddBody(id, "v1", Tt(104)).ok());
}

TEST(TxnManagerLimitTest, ABodyPastTheLimitIsRejectedAndTheTxnIsUnharmed) {
  // Begin and Commit count kTxnMessageBytes each, every body its size plus as much.
  TxnManager m({.max_txn_bytes = 10 * kTxnMessageBytes});
  auto ctx = m.BeginTxn("v1", 1000, Tt(100));
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  const TxnId id(ctx->txn_id());
  ASSERT_TRUE(m.AddBody(id, "v1", Tt(101), 3 * kTxnMessageBytes).ok());  // holds 6 of 10
  absl::Status s = m.AddBody(id, "v1", Tt(102), 4 * kTxnMessageBytes);   // would hold 11
  EXPECT_EQ(CodeOf(s), StreamingCode::kInvalidArgument);
  EXPECT_NE(s.message().find("past its limit of 5120 bytes"), std::string_view::npos) << s;
  EXPECT_EQ(m.GetState(id), State::kActive);
  ASSERT_TRUE(m.AddBody(id, "v1", Tt(103), 3 * kTxnMessageBytes).ok());  // exactly 10
  EXPECT_EQ(CodeOf(m.AddBody(id, "v1", Tt(104), 0)), StreamingCode::kInvalidArgument);
  m.BodyDurable(id);
  m.BodyDurable(id);
  GateProbe gate;
  ASSERT_TRUE(m.Commit(id, "v1", Tt(105), gate.Gate()).ok());
  EXPECT_TRUE(gate.status.ok()) << gate.status;
  EXPECT_EQ(m.GetState(id), State::kCommitted);
}

TEST(TxnManagerLimitTest, TheOpenTxnsOfAPChannelAreBoundedTogether) {
  // Each txn counts 2 for its Begin and Commit, each body its size plus 1 (kTxnMessageBytes).
  TxnManager m({.max_open_bytes = 10 * kTxnMessageBytes});
  auto a = m.BeginTxn("v1", 1000, Tt(100));
  auto b = m.BeginTxn("v2", 1000, Tt(101));
  ASSERT_TRUE(a.ok() && b.ok());
  const TxnId ta(a->txn_id()), tb(b->txn_id());
  ASSERT_TRUE(m.AddBody(ta, "v1", Tt(102), 2 * kTxnMessageBytes).ok());  // open: 4 + 3
  absl::Status s = m.AddBody(tb, "v2", Tt(103), 3 * kTxnMessageBytes);   // would be 11
  EXPECT_EQ(CodeOf(s), StreamingCode::kRateLimited) << s;
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(m.GetState(tb), State::kActive);
  ASSERT_TRUE(m.AddBody(tb, "v2", Tt(104), 2 * kTxnMessageBytes).ok());  // exactly 10
  EXPECT_EQ(CodeOf(m.BeginTxn("v3", 1000, Tt(105)).status()), StreamingCode::kRateLimited);
  // What a txn held is free again once it ends: committed, rolled back or expired.
  m.BodyDurable(ta);
  GateProbe gate;
  ASSERT_TRUE(m.Commit(ta, "v1", Tt(106), gate.Gate()).ok());
  ASSERT_TRUE(m.AddBody(tb, "v2", Tt(107), 4 * kTxnMessageBytes).ok());  // 5 + 5
  ASSERT_TRUE(m.Rollback(tb, "v2", Tt(108)).ok());
  auto c = m.BeginTxn("v3", 1, Tt(109));
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(m.AddBody(TxnId(c->txn_id()), "v3", Tt(110), 7 * kTxnMessageBytes).ok());
  EXPECT_EQ(CodeOf(m.BeginTxn("v4", 1000, Tt(111)).status()), StreamingCode::kRateLimited);
  m.ObserveWatermark(Tt(110 + 2 * kMs));  // c's keepalive (1 ms) passed
  EXPECT_EQ(m.GetState(TxnId(c->txn_id())), State::kExpired);
  EXPECT_TRUE(m.BeginTxn("v4", 1000, Tt(112 + 2 * kMs)).ok());
}

TEST(TxnManagerLimitTest, NoLimitByDefault) {
  TxnManager m;
  auto ctx = m.BeginTxn("v1", 1000, Tt(100));
  ASSERT_TRUE(ctx.ok()) << ctx.status();
  EXPECT_TRUE(m.AddBody(TxnId(ctx->txn_id()), "v1", Tt(101), uint64_t{1} << 40).ok());
}

TEST_F(TxnManagerTest, CommitWithNothingInFlightOpensTheGateAtOnce) {
  TxnId id = Begin(Tt(100));
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(101)).ok());
  m_.BodyDurable(id);
  GateProbe gate;
  ASSERT_TRUE(m_.Commit(id, "v1", Tt(102), gate.Gate()).ok());
  EXPECT_EQ(gate.calls, 1);
  EXPECT_TRUE(gate.status.ok());
  EXPECT_EQ(m_.GetState(id), State::kCommitted);
  EXPECT_EQ(m_.LiveCount(), 0u);
}

TEST_F(TxnManagerTest, CommitWaitsForEveryInFlightBody) {
  TxnId id = Begin(Tt(100));
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(101)).ok());
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(102)).ok());
  GateProbe gate;
  ASSERT_TRUE(m_.Commit(id, "v1", Tt(103), gate.Gate()).ok());
  EXPECT_EQ(gate.calls, 0);
  EXPECT_EQ(m_.GetState(id), State::kCommitting);
  m_.BodyDurable(id);
  EXPECT_EQ(gate.calls, 0);
  m_.BodyDurable(id);
  EXPECT_EQ(gate.calls, 1);
  EXPECT_TRUE(gate.status.ok());
  EXPECT_EQ(m_.GetState(id), State::kCommitted);
  m_.BodyDurable(id);  // a stray extra call changes nothing
  EXPECT_EQ(gate.calls, 1);
}

TEST_F(TxnManagerTest, ABodyFailingWhileCommittingFailsTheGate) {
  TxnId id = Begin(Tt(100));
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(101)).ok());
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(102)).ok());
  GateProbe gate;
  ASSERT_TRUE(m_.Commit(id, "v1", Tt(103), gate.Gate()).ok());
  m_.BodyFailed(id, absl::UnavailableError("disk gone"));
  EXPECT_EQ(gate.calls, 0);  // still one body in flight
  m_.BodyDurable(id);
  EXPECT_EQ(gate.calls, 1);
  EXPECT_EQ(gate.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(m_.GetState(id), State::kFailed);
}

TEST_F(TxnManagerTest, ABodyFailingWhileActiveFailsTheTxn) {
  TxnId id = Begin(Tt(100));
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(101)).ok());
  m_.BodyFailed(id, absl::UnavailableError("disk gone"));
  EXPECT_EQ(m_.GetState(id), State::kFailed);
  GateProbe gate;
  absl::Status s = m_.Commit(id, "v1", Tt(102), gate.Gate());
  EXPECT_EQ(CodeOf(s), StreamingCode::kInvalidTransactionState);
  EXPECT_NE(s.message().find("disk gone"), std::string_view::npos);
  EXPECT_EQ(gate.calls, 0);
}

TEST_F(TxnManagerTest, BodyOrCommitAfterCommitIsInvalidState) {
  TxnId id = Begin(Tt(100));
  GateProbe gate;
  ASSERT_TRUE(m_.Commit(id, "v1", Tt(101), gate.Gate()).ok());
  absl::Status body = m_.AddBody(id, "v1", Tt(102));
  EXPECT_EQ(CodeOf(body), StreamingCode::kInvalidTransactionState);
  EXPECT_NE(body.message().find("committed"), std::string_view::npos);
  GateProbe again;
  EXPECT_EQ(CodeOf(m_.Commit(id, "v1", Tt(103), again.Gate())),
            StreamingCode::kInvalidTransactionState);
  EXPECT_EQ(CodeOf(m_.Rollback(id, "v1", Tt(104))), StreamingCode::kInvalidTransactionState);
  EXPECT_EQ(again.calls, 0);
}

TEST_F(TxnManagerTest, BodyWhileCommittingIsInvalidState) {
  TxnId id = Begin(Tt(100));
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(101)).ok());
  GateProbe gate;
  ASSERT_TRUE(m_.Commit(id, "v1", Tt(102), gate.Gate()).ok());
  absl::Status s = m_.AddBody(id, "v1", Tt(103));
  EXPECT_EQ(CodeOf(s), StreamingCode::kInvalidTransactionState);
  EXPECT_NE(s.message().find("committing"), std::string_view::npos);
}

TEST_F(TxnManagerTest, RollbackEndsTheTxnWithoutWaiting) {
  TxnId id = Begin(Tt(100));
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(101)).ok());
  ASSERT_TRUE(m_.Rollback(id, "v1", Tt(102)).ok());
  EXPECT_EQ(m_.GetState(id), State::kRolledBack);
  EXPECT_FALSE(m_.EarliestActiveBegin().has_value());
  EXPECT_EQ(m_.LiveCount(), 1u);  // its body is still in flight
  m_.BodyDurable(id);
  EXPECT_EQ(m_.LiveCount(), 0u);
  EXPECT_EQ(m_.GetState(id), State::kRolledBack);
  GateProbe gate;
  EXPECT_EQ(CodeOf(m_.Commit(id, "v1", Tt(103), gate.Gate())),
            StreamingCode::kInvalidTransactionState);
}

TEST_F(TxnManagerTest, WatermarkExpiresTxnsWithNoBodyInTime) {
  TxnId a = Begin(Tt(100));
  TxnId b = Begin(Tt(200));
  EXPECT_TRUE(m_.ObserveWatermark(Tt(100 + kMs)).empty());  // at the deadline: still alive
  EXPECT_EQ(m_.ObserveWatermark(Tt(100 + kMs + 1)), std::vector<TxnId>{a});
  EXPECT_EQ(m_.GetState(a), State::kExpired);
  EXPECT_EQ(m_.GetState(b), State::kActive);
  EXPECT_EQ(CodeOf(m_.AddBody(a, "v1", Tt(100 + kMs + 2))), StreamingCode::kTransactionExpired);
  auto earliest = m_.EarliestActiveBegin();
  ASSERT_TRUE(earliest.has_value());
  EXPECT_EQ(earliest->txn_id, b);
}

TEST_F(TxnManagerTest, WatermarkDoesNotExpireACommittingTxn) {
  TxnId id = Begin(Tt(100));
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(101)).ok());
  GateProbe gate;
  ASSERT_TRUE(m_.Commit(id, "v1", Tt(102), gate.Gate()).ok());
  EXPECT_TRUE(m_.ObserveWatermark(Tt(102 + 10 * kMs)).empty());
  m_.BodyDurable(id);
  EXPECT_TRUE(gate.status.ok());
}

TEST_F(TxnManagerTest, FailVChannelFailsOnlyThatVChannelsActiveTxns) {
  TxnId a = Begin(Tt(100), "v1");
  TxnId b = Begin(Tt(101), "v2");
  TxnId c = Begin(Tt(102), "v1");
  GateProbe gate;
  ASSERT_TRUE(m_.Commit(c, "v1", Tt(103), gate.Gate()).ok());  // already committed: unaffected
  EXPECT_EQ(m_.FailVChannel("v1"), std::vector<TxnId>{a});
  EXPECT_EQ(m_.GetState(a), State::kFailed);
  EXPECT_EQ(m_.GetState(b), State::kActive);
  EXPECT_EQ(m_.GetState(c), State::kCommitted);
  absl::Status s = m_.AddBody(a, "v1", Tt(104));
  EXPECT_EQ(CodeOf(s), StreamingCode::kInvalidTransactionState);
  EXPECT_NE(s.message().find("exclusive"), std::string_view::npos);
  EXPECT_EQ(m_.EarliestActiveBegin()->txn_id, b);
}

TEST_F(TxnManagerTest, FailTxnFailsAnActiveOrCommittingTxnOnce) {
  TxnId id = Begin(Tt(100));
  ASSERT_TRUE(m_.AddBody(id, "v1", Tt(101)).ok());
  GateProbe gate;
  ASSERT_TRUE(m_.Commit(id, "v1", Tt(102), gate.Gate()).ok());
  EXPECT_TRUE(m_.FailTxn(id, absl::ResourceExhaustedError("commit not enqueued")));
  EXPECT_FALSE(m_.FailTxn(id, absl::InternalError("twice")));
  EXPECT_EQ(gate.calls, 0);
  m_.BodyDurable(id);
  EXPECT_EQ(gate.calls, 1);
  EXPECT_EQ(gate.status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_FALSE(m_.FailTxn(TxnId(999), absl::InternalError("unknown")));
}

TEST_F(TxnManagerTest, EarliestActiveBeginIsTheOldestActiveBeginWithAKnownId) {
  EXPECT_FALSE(m_.EarliestActiveBegin().has_value());
  // Stamping a Begin: its own id is not known yet, so it does not bound its own LCMID.
  auto first = m_.BeginTxn("v1", 0, Tt(100));
  ASSERT_TRUE(first.ok());
  EXPECT_FALSE(m_.EarliestActiveBegin().has_value());
  m_.SetBeginId(TxnId(100), MessageId::Local(7));
  TxnId second = Begin(Tt(200));
  auto e = m_.EarliestActiveBegin();
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->txn_id, TxnId(100));
  EXPECT_EQ(e->timetick, Tt(100));
  EXPECT_EQ(e->id, MessageId::Local(7));
  GateProbe gate;
  ASSERT_TRUE(m_.Commit(TxnId(100), "v1", Tt(300), gate.Gate()).ok());
  EXPECT_EQ(m_.EarliestActiveBegin()->txn_id, second);
  ASSERT_TRUE(m_.Rollback(second, "v1", Tt(301)).ok());
  EXPECT_FALSE(m_.EarliestActiveBegin().has_value());
}

TEST_F(TxnManagerTest, RetiredMemoryIsBounded) {
  TxnManager small(TxnManagerOptions{.retired_memory = 2});
  for (uint64_t t = 1; t <= 3; ++t) {
    ASSERT_TRUE(small.BeginTxn("v1", 0, Tt(t)).ok());
    ASSERT_TRUE(small.Rollback(TxnId(t), "v1", Tt(t)).ok());
  }
  EXPECT_FALSE(small.GetState(TxnId(1)).has_value());  // forgotten: "unknown" from now on
  EXPECT_EQ(small.GetState(TxnId(2)), State::kRolledBack);
  EXPECT_EQ(small.GetState(TxnId(3)), State::kRolledBack);
}

TEST(TxnKeepaliveTest, DeadlineSaturates) {
  EXPECT_EQ(TxnDeadline(TimeTick(5), 2), TimeTick(5 + 2 * kMs));
  EXPECT_EQ(TxnDeadline(TimeTick(5), int64_t{1} << 62),
            TimeTick(std::numeric_limits<uint64_t>::max()));
  EXPECT_EQ(TxnDeadline(TimeTick(std::numeric_limits<uint64_t>::max() - 1), 1),
            TimeTick(std::numeric_limits<uint64_t>::max()));
}

}  // namespace
}  // namespace kf::wal
