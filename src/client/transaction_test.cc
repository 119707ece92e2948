// Producer::BeginTxn / Transaction against the fake node, which assigns txn ids and enforces
// begin -> bodies -> commit/rollback as the WAL does.
#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <vector>

#include "client/fake_streaming_node.h"
#include "common/errors.h"
#include "gtest/gtest.h"
#include "kingfisher/client.h"
#include "message/message_trace.h"
#include "trace/public_context.h"
#include "trace/testing/scoped_in_memory_tracing.h"

namespace kf::client {
namespace {

using kingfisher::AppendResult;
using testing::FakeStreamingNode;
using testing::MakeWireError;
using testing::SentMessage;
using TxnPhase = FakeStreamingNode::TxnPhase;
namespace v1 = kingfisher::v1;

constexpr char kVChannel[] = "kf-dml_0_orders";

kingfisher::Message Body(std::string payload) {
  return kingfisher::Message{
      .type = MessageType::kInsert, .vchannel = kVChannel, .payload = std::move(payload)};
}

MessageType TypeOf(const v1::ProduceRequest& r) { return SentMessage(r).type(); }
int64_t TxnIdOf(const v1::ProduceRequest& r) {
  auto t = SentMessage(r).txn();
  return t ? t->txn_id() : -1;
}
std::string PayloadOf(const v1::ProduceRequest& r) { return SentMessage(r).payload(); }

// A producer on a fake node; tracing records every span.
class TransactionTest : public ::testing::Test {
 protected:
  trace::testing::ScopedInMemoryTracing tracing;
  FakeStreamingNode node;
  std::unique_ptr<kingfisher::Client> client = testing::ConnectTo(node);
  std::unique_ptr<kingfisher::Producer> producer = *client->CreateProducer();

  // The transaction's wal.txn span (it must have ended).
  trace::SpanData WalTxnSpan() {
    auto spans = tracing.SpansNamed("wal.txn");
    EXPECT_EQ(spans.size(), 1u);
    return spans.empty() ? trace::SpanData() : spans[0];
  }
};

TEST_F(TransactionTest, BeginBodiesCommitCarryTheTxnId) {
  auto txn = producer->BeginTxn(kVChannel, {.keepalive = std::chrono::milliseconds(2500)});
  ASSERT_TRUE(txn.ok()) << txn.status();
  const TxnId id = (*txn)->txn_id();
  EXPECT_EQ(id, TxnId(1001));  // the fake's Begin timetick
  EXPECT_EQ((*txn)->vchannel(), kVChannel);

  auto b1 = (*txn)->AppendSync(Body("b1"));
  ASSERT_TRUE(b1.ok()) << b1.status();
  EXPECT_EQ(b1->txn_id, id);
  kingfisher::Message no_vchannel{.type = MessageType::kDelete, .payload = "b2"};  // the txn's
  ASSERT_TRUE((*txn)->AppendSync(no_vchannel).ok());
  auto commit = (*txn)->Commit();
  ASSERT_TRUE(commit.ok()) << commit.status();
  EXPECT_EQ(commit->txn_id, id);

  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(TypeOf(reqs[0]), MessageType::kBeginTxn);
  EXPECT_EQ(SentMessage(reqs[0]).txn()->keepalive_ms(), 2500);
  EXPECT_EQ(TypeOf(reqs[1]), MessageType::kInsert);
  EXPECT_EQ(TypeOf(reqs[2]), MessageType::kDelete);
  EXPECT_EQ(SentMessage(reqs[2]).vchannel(), kVChannel);
  EXPECT_EQ(TypeOf(reqs[3]), MessageType::kCommitTxn);
  for (size_t i = 1; i < 4; ++i) EXPECT_EQ(TxnIdOf(reqs[i]), id.value()) << i;
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(SentMessage(reqs[i]).properties().at("_ik"),
              producer->producer_id() + ":" + std::to_string(i + 1));
  }
  auto txns = node.txns();
  ASSERT_EQ(txns.count(id.value()), 1u);
  EXPECT_EQ(txns[id.value()].phase, TxnPhase::kCommitted);
  EXPECT_EQ(txns[id.value()].bodies, (std::vector<std::string>{"b1", "b2"}));

  // Finished: nothing more is sent.
  EXPECT_EQ((*txn)->AppendSync(Body("late")).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*txn)->Commit().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*txn)->Rollback().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(node.produce_requests().size(), 4u);
}

// docs/tracing.md §8 scenario 7: a txn of 2 bodies is exactly 4 appends (Begin, 2 bodies, Commit),
// each carrying the wal.txn context; no wal.autocommit per body.
TEST_F(TransactionTest, TxnOfTwoBodiesIsFourAppendsCarryingTheWalTxnContext) {
  auto [caller, caller_span] = trace::WalTracer()->StartSpan(trace::Context(), "request");
  auto txn = producer->BeginTxn(kVChannel, {.trace = trace::ToPublic(caller.span_context())});
  ASSERT_TRUE(txn.ok()) << txn.status();
  ASSERT_TRUE((*txn)->AppendSync(Body("b1")).ok());
  ASSERT_TRUE((*txn)->AppendSync(Body("b2")).ok());
  ASSERT_TRUE((*txn)->Commit().ok());
  caller_span->End();

  const trace::SpanData wal_txn = WalTxnSpan();
  EXPECT_EQ(wal_txn.kind, trace::SpanKind::kProducer);
  EXPECT_EQ(wal_txn.parent_span_id, caller_span->context().span_id);
  EXPECT_EQ(wal_txn.context.trace_id, caller_span->context().trace_id);
  EXPECT_NE(wal_txn.status, trace::SpanStatusCode::kError);
  EXPECT_EQ(std::get<int64_t>(wal_txn.attributes.at("txn.id")), (*txn)->txn_id().value());
  EXPECT_TRUE(tracing.SpansNamed("wal.autocommit").empty());

  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(TypeOf(reqs[0]), MessageType::kBeginTxn);
  EXPECT_EQ(TypeOf(reqs[1]), MessageType::kInsert);
  EXPECT_EQ(TypeOf(reqs[2]), MessageType::kInsert);
  EXPECT_EQ(TypeOf(reqs[3]), MessageType::kCommitTxn);
  auto dist = tracing.SpansNamed("wal.dist_append");
  ASSERT_EQ(dist.size(), 4u);  // one per concrete message (no retries here)
  for (size_t i = 0; i < reqs.size(); ++i) {
    // The sent `_tc` is this message's wal.dist_append, a child of wal.txn.
    trace::SpanContext sent =
        ExtractTraceContext(trace::Context(), SentMessage(reqs[i])).span_context();
    EXPECT_EQ(sent.trace_id, wal_txn.context.trace_id) << i;
    int matches = 0;
    for (const auto& d : dist) {
      if (d.context.span_id != sent.span_id) continue;
      ++matches;
      EXPECT_EQ(d.parent_span_id, wal_txn.context.span_id) << i;
      EXPECT_EQ(d.kind, trace::SpanKind::kProducer);
    }
    EXPECT_EQ(matches, 1) << "request " << i << " must carry its own wal.dist_append";
  }
  for (const auto& s : tracing.Spans()) {
    EXPECT_TRUE(s.name == "wal.txn" || s.name == "wal.dist_append" || s.name == "request")
        << s.name;
  }
}

TEST_F(TransactionTest, RollbackDiscardsTheTransaction) {
  auto txn = *producer->BeginTxn(kVChannel);
  ASSERT_TRUE(txn->AppendSync(Body("b1")).ok());
  ASSERT_TRUE(txn->Rollback().ok());

  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(TypeOf(reqs[2]), MessageType::kRollbackTxn);
  EXPECT_EQ(TxnIdOf(reqs[2]), txn->txn_id().value());
  EXPECT_EQ(node.txns()[txn->txn_id().value()].phase, TxnPhase::kRolledBack);
  EXPECT_EQ(txn->Commit().status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(node.produce_requests().size(), 3u);
  EXPECT_NE(WalTxnSpan().status, trace::SpanStatusCode::kError);
}

TEST_F(TransactionTest, DestroyedOpenTransactionIsRolledBack) {
  int64_t id;
  {
    auto txn = *producer->BeginTxn(kVChannel);
    id = txn->txn_id().value();
    ASSERT_TRUE(txn->AppendSync(Body("b1")).ok());
  }
  producer->Close();  // waits for the best-effort rollback

  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(TypeOf(reqs[2]), MessageType::kRollbackTxn);
  EXPECT_EQ(node.txns()[id].phase, TxnPhase::kRolledBack);
  EXPECT_EQ(WalTxnSpan().status, trace::SpanStatusCode::kError);  // abandoned, not committed
}

TEST_F(TransactionTest, CommittedTransactionIsNotRolledBackOnDestruction) {
  {
    auto txn = *producer->BeginTxn(kVChannel);
    ASSERT_TRUE(txn->Commit().ok());
  }
  producer->Close();
  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(TypeOf(reqs[1]), MessageType::kCommitTxn);
}

// docs/semantics.md §3: TRANSACTION_EXPIRED is not retried (the caller retries the whole txn), and
// a transaction missing a body is never committed.
TEST_F(TransactionTest, ExpiredBodyFailsAtOnceAndCommitIsRefused) {
  auto txn = *producer->BeginTxn(kVChannel);
  node.ExpireTxns();
  auto body = txn->AppendSync(Body("b1"));
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(GetStreamingCode(body.status()), StreamingCode::kTransactionExpired);
  EXPECT_EQ(node.produce_requests().size(), 2u);  // Begin + one body attempt, no retry

  auto commit = txn->Commit();
  ASSERT_FALSE(commit.ok());
  EXPECT_EQ(GetStreamingCode(commit.status()), StreamingCode::kTransactionExpired)
      << commit.status();
  for (const auto& r : node.produce_requests()) {
    EXPECT_NE(TypeOf(r), MessageType::kCommitTxn) << "a txn that lost a body was committed";
  }
  EXPECT_EQ(WalTxnSpan().status, trace::SpanStatusCode::kError);
}

TEST_F(TransactionTest, InvalidTransactionStateAtCommitFailsAtOnce) {
  node.SetErrorInjector([](const v1::ProduceRequest& r) -> std::optional<v1::Error> {
    if (TypeOf(r) == MessageType::kCommitTxn) {
      return MakeWireError(StreamingCode::kInvalidTransactionState);
    }
    return std::nullopt;
  });
  auto txn = *producer->BeginTxn(kVChannel);
  auto commit = txn->Commit();
  ASSERT_FALSE(commit.ok());
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(GetStreamingCode(commit.status()), StreamingCode::kInvalidTransactionState);
  EXPECT_EQ(node.produce_requests().size(), 2u);  // Begin + one commit attempt
}

// A body whose first attempt fails retryably is retried with the same `_ik`; Commit waits for
// it, so the CommitTxn cannot overtake the retry (the commit would then miss the body).
TEST_F(TransactionTest, CommitWaitsForBodiesBeingRetried) {
  auto failed_once = std::make_shared<std::atomic<bool>>(false);
  node.SetErrorInjector([failed_once](const v1::ProduceRequest& r) -> std::optional<v1::Error> {
    if (PayloadOf(r) == "b1" && !failed_once->exchange(true)) {
      return MakeWireError(StreamingCode::kOnShutdown);
    }
    return std::nullopt;
  });
  auto txn = *producer->BeginTxn(kVChannel);
  std::atomic<int> callbacks{0};
  for (const char* p : {"b1", "b2"}) {
    txn->AppendAsync(Body(p), [&callbacks](absl::StatusOr<AppendResult> r) {
      EXPECT_TRUE(r.ok()) << r.status();
      ++callbacks;
    });
  }
  auto commit = txn->Commit();
  ASSERT_TRUE(commit.ok()) << commit.status();
  EXPECT_EQ(callbacks.load(), 2);  // every body's callback ran before Commit returned

  auto record = node.txns()[txn->txn_id().value()];
  EXPECT_EQ(record.phase, TxnPhase::kCommitted);
  EXPECT_EQ(record.bodies.size(), 2u);
  std::vector<std::string> b1_keys;
  for (const auto& r : node.produce_requests()) {
    if (PayloadOf(r) == "b1") b1_keys.push_back(SentMessage(r).properties().at("_ik"));
  }
  ASSERT_EQ(b1_keys.size(), 2u);
  EXPECT_EQ(b1_keys[0], b1_keys[1]);  // the retry kept the key
}

TEST_F(TransactionTest, BadBodiesAndOptionsAreRejectedWithoutBeingSent) {
  EXPECT_EQ(producer->BeginTxn(kVChannel, {.keepalive = std::chrono::seconds(-1)}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(producer->BeginTxn("orders").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(node.produce_requests().empty());

  auto txn = *producer->BeginTxn(kVChannel);
  kingfisher::Message other = Body("x");
  other.vchannel = "kf-dml_0_other";
  EXPECT_EQ(txn->AppendSync(other).status().code(), absl::StatusCode::kInvalidArgument);
  kingfisher::Message ddl{.type = MessageType::kCreateCollection, .vchannel = kVChannel};
  EXPECT_EQ(txn->AppendSync(ddl).status().code(), absl::StatusCode::kInvalidArgument);
  kingfisher::Message commit{.type = MessageType::kCommitTxn, .vchannel = kVChannel};
  EXPECT_EQ(txn->AppendSync(commit).status().code(), absl::StatusCode::kInvalidArgument);
  kingfisher::Message forged = Body("x");
  forged.properties.insert_or_assign("_tx", "");
  EXPECT_EQ(txn->AppendSync(forged).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(node.produce_requests().size(), 1u);  // only the Begin
  ASSERT_TRUE(txn->Commit().ok());
  EXPECT_TRUE(node.txns()[txn->txn_id().value()].bodies.empty());
}

}  // namespace
}  // namespace kf::client
