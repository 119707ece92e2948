#include "wal/txn/txn_buffer.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "message/builders.h"
#include "message/properties.h"
#include "wal/txn/txn_keepalive.h"
#include "wal/txn/txn_message.h"

namespace kf::wal {
namespace {

constexpr uint64_t kMs = uint64_t{1} << kLogicalBits;

// Stamps `m` as the WAL would (timetick, LCMID = itself, id = Local(tt)) with a distinct `_tc`.
ImmutableMessagePtr Stamp(MutableMessage m, uint64_t tt) {
  m.set_timetick(TimeTick(tt));
  m.set_last_confirmed_self();
  if (m.type() != MessageType::kTimeTick) {
    m.SetProperty(std::string(prop::kTraceContext), "tc-" + std::to_string(tt));
  }
  return std::make_shared<const ImmutableMessage>(MessageId::Local(tt), std::move(m));
}

kingfisher::v1::TxnContext Ctx(int64_t id, int64_t keepalive_ms = 0) {
  kingfisher::v1::TxnContext c;
  c.set_txn_id(id);
  c.set_keepalive_ms(keepalive_ms);
  return c;
}

ImmutableMessagePtr Begin(uint64_t tt, int64_t keepalive_ms = 1, std::string vc = "v1") {
  MutableMessage m = NewBeginTxnMessage(std::move(vc), keepalive_ms);
  m.set_txn(Ctx(static_cast<int64_t>(tt), keepalive_ms));  // the WAL assigns id = Begin's tt
  return Stamp(std::move(m), tt);
}
ImmutableMessagePtr Body(uint64_t tt, int64_t txn, std::string vc = "v1") {
  MutableMessage m(MessageType::kInsert, "rows-" + std::to_string(tt));
  m.set_vchannel(std::move(vc));
  m.set_txn(Ctx(txn));
  return Stamp(std::move(m), tt);
}
ImmutableMessagePtr Commit(uint64_t tt, int64_t txn, std::string vc = "v1") {
  return Stamp(NewCommitTxnMessage(std::move(vc), TxnId(txn)), tt);
}
ImmutableMessagePtr Rollback(uint64_t tt, int64_t txn, std::string vc = "v1") {
  return Stamp(NewRollbackTxnMessage(std::move(vc), TxnId(txn)), tt);
}
ImmutableMessagePtr Insert(uint64_t tt, std::string vc = "v1") {
  MutableMessage m(MessageType::kInsert, "plain");
  m.set_vchannel(std::move(vc));
  return Stamp(std::move(m), tt);
}
ImmutableMessagePtr Tick(uint64_t tt) { return Stamp(NewTimeTickMessage(TimeTick(tt)), tt); }

// Feeds `msg` and returns what is delivered; fails the test on an error.
std::vector<ImmutableMessagePtr> FeedOk(TxnBuffer& b, ImmutableMessagePtr msg) {
  std::vector<ImmutableMessagePtr> out;
  absl::Status s = b.Feed(std::move(msg), &out);
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

TEST(TxnBufferTest, NonTxnMessagesPassThrough) {
  TxnBuffer b;
  auto ins = Insert(5);
  auto out = FeedOk(b, ins);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], ins);  // the same shared instance, not a copy
  auto tick = Tick(6);
  out = FeedOk(b, tick);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], tick);
  EXPECT_EQ(AsTxnMessage(*ins), nullptr);
}

// docs/tracing.md §8 scenario 11, the txn input: exactly one Txn at the Commit, carrying its `_tc`.
TEST(TxnBufferTest, CommitDeliversOneTxnWithTheCommitsIdentity) {
  TxnBuffer b;
  auto begin = Begin(100, 0);
  auto body = Body(101, 100);
  auto commit = Commit(102, 100);
  EXPECT_TRUE(FeedOk(b, begin).empty());
  EXPECT_TRUE(FeedOk(b, body).empty());
  EXPECT_EQ(b.HeldTxns(), 1u);
  auto out = FeedOk(b, commit);
  ASSERT_EQ(out.size(), 1u);
  const ImmutableMessage& txn = *out[0];
  EXPECT_EQ(txn.type(), MessageType::kTxn);
  EXPECT_EQ(txn.timetick(), TimeTick(102));
  EXPECT_EQ(txn.id(), commit->id());
  EXPECT_EQ(txn.last_confirmed(), commit->last_confirmed());
  EXPECT_EQ(txn.vchannel(), "v1");
  EXPECT_EQ(txn.message().GetProperty(prop::kTraceContext),
            commit->message().GetProperty(prop::kTraceContext));
  EXPECT_EQ(txn.message().txn()->txn_id(), 100);
  const TxnMessage* t = AsTxnMessage(txn);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->inner(), (std::vector<ImmutableMessagePtr>{begin, body, commit}));
  auto tick = FeedOk(b, Tick(103));
  ASSERT_EQ(tick.size(), 1u);
  EXPECT_EQ(tick[0]->type(), MessageType::kTimeTick);
  EXPECT_EQ(b.HeldTxns(), 0u);
  EXPECT_EQ(b.HeldBytes(), 0u);
}

TEST(TxnBufferTest, InterleavedMessagesKeepWalOrder) {
  TxnBuffer b;
  FeedOk(b, Begin(100, 0));
  FeedOk(b, Begin(101, 0, "v2"));
  auto plain = FeedOk(b, Insert(102));
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0]->timetick(), TimeTick(102));
  FeedOk(b, Body(103, 101, "v2"));
  FeedOk(b, Body(104, 100));
  auto second = FeedOk(b, Commit(105, 101, "v2"));
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(AsTxnMessage(*second[0])->inner().size(), 3u);
  auto first = FeedOk(b, Commit(106, 100));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(AsTxnMessage(*first[0])->inner()[1]->timetick(), TimeTick(104));
}

TEST(TxnBufferTest, RollbackDropsTheTxn) {
  TxnBuffer b;
  FeedOk(b, Begin(100));
  FeedOk(b, Body(101, 100));
  EXPECT_TRUE(FeedOk(b, Rollback(102, 100)).empty());
  EXPECT_EQ(b.HeldTxns(), 0u);
  EXPECT_EQ(b.HeldBytes(), 0u);
  EXPECT_TRUE(FeedOk(b, Commit(103, 100)).empty());  // nothing left to commit
}

TEST(TxnBufferTest, WatermarkPastTheKeepaliveExpiresTheTxn) {
  TxnBuffer b;
  FeedOk(b, Begin(100, 1));
  EXPECT_EQ(FeedOk(b, Tick(100 + kMs)).size(), 1u);  // at the deadline: still alive
  EXPECT_EQ(b.HeldTxns(), 1u);
  EXPECT_EQ(FeedOk(b, Tick(100 + kMs + 1)).size(), 1u);
  EXPECT_EQ(b.HeldTxns(), 0u);
  EXPECT_TRUE(FeedOk(b, Commit(100 + kMs + 2, 100)).empty());
}

TEST(TxnBufferTest, BodiesExtendTheDeadline) {
  TxnBuffer b;
  FeedOk(b, Begin(100, 1));
  FeedOk(b, Body(100 + kMs, 100));
  FeedOk(b, Tick(100 + 2 * kMs));
  EXPECT_EQ(FeedOk(b, Commit(100 + 2 * kMs + 1, 100)).size(), 0u)
      << "the commit is later than last body + keepalive: the append side refuses it";
  FeedOk(b, Begin(1000 * kMs, 1));
  FeedOk(b, Body(1001 * kMs, 1000 * kMs));
  EXPECT_EQ(FeedOk(b, Commit(1002 * kMs, 1000 * kMs)).size(), 1u);
}

TEST(TxnBufferTest, ZeroKeepaliveMeansTheDefault) {
  TxnBuffer b;
  FeedOk(b, Begin(100, 0));
  const uint64_t deadline = 100 + kDefaultTxnKeepaliveMs * kMs;
  FeedOk(b, Tick(deadline));
  EXPECT_EQ(b.HeldTxns(), 1u);
  FeedOk(b, Tick(deadline + 1));
  EXPECT_EQ(b.HeldTxns(), 0u);
}

TEST(TxnBufferTest, ExclusiveMessageDropsTheTxnsOfItsVChannel) {
  TxnBuffer b;
  FeedOk(b, Begin(100, 0, "v1"));
  FeedOk(b, Begin(101, 0, "v2"));
  auto ddl = Stamp(NewDropCollectionMessage("v1", 7), 102);
  ASSERT_EQ(FeedOk(b, ddl).size(), 1u);
  EXPECT_EQ(b.HeldTxns(), 1u);
  EXPECT_TRUE(FeedOk(b, Commit(103, 100, "v1")).empty());
  EXPECT_EQ(FeedOk(b, Commit(104, 101, "v2")).size(), 1u);
}

TEST(TxnBufferTest, ATxnBegunBeforeTheReaderIsNeverDelivered) {
  TxnBuffer b;
  EXPECT_TRUE(FeedOk(b, Body(101, 100)).empty());
  EXPECT_TRUE(FeedOk(b, Commit(102, 100)).empty());
  EXPECT_TRUE(FeedOk(b, Rollback(103, 99)).empty());
  EXPECT_EQ(b.HeldTxns(), 0u);
}

TEST(TxnBufferTest, ByteCapIsResourceExhaustedAndSticky) {
  auto begin = Begin(100, 0);
  auto body = Body(101, 100);
  TxnBuffer b(TxnBufferOptions{.max_held_bytes =
                                   begin->message().EncodedSize() + body->message().EncodedSize()});
  FeedOk(b, begin);
  FeedOk(b, body);
  std::vector<ImmutableMessagePtr> out;
  absl::Status s = b.Feed(Body(102, 100), &out);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(b.Feed(Insert(103), &out).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(out.empty());
}

TEST(TxnBufferTest, CommittedBytesAreReleased) {
  auto begin = Begin(100, 0);
  auto body = Body(101, 100);
  const size_t one_txn = begin->message().EncodedSize() + body->message().EncodedSize();
  TxnBuffer b(TxnBufferOptions{.max_held_bytes = one_txn + 8});
  for (uint64_t base = 100; base < 1000; base += 100) {
    FeedOk(b, Begin(base, 0));
    FeedOk(b, Body(base + 1, static_cast<int64_t>(base)));
    EXPECT_EQ(FeedOk(b, Commit(base + 2, static_cast<int64_t>(base))).size(), 1u);
    EXPECT_EQ(b.HeldBytes(), 0u);
  }
}

TEST(TxnBufferTest, CorruptInputIsDataLossAndTheBufferStaysUsable) {
  TxnBuffer b;
  std::vector<ImmutableMessagePtr> out;
  MutableMessage stored_txn(MessageType::kTxn, "");
  EXPECT_EQ(b.Feed(Stamp(stored_txn, 50), &out).code(), absl::StatusCode::kDataLoss);
  MutableMessage commit_without_tx(MessageType::kCommitTxn, "");
  commit_without_tx.set_vchannel("v1");
  EXPECT_EQ(b.Feed(Stamp(commit_without_tx, 51), &out).code(), absl::StatusCode::kDataLoss);
  MutableMessage bad_tx(MessageType::kInsert, "");
  bad_tx.SetProperty(std::string(prop::kTxn), "!!!");
  EXPECT_EQ(b.Feed(Stamp(bad_tx, 52), &out).code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(FeedOk(b, Insert(53)).size(), 1u);
}

}  // namespace
}  // namespace kf::wal
