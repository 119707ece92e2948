// Transactions through the C++ client against the real standalone server (docs/semantics.md §3):
// what the acks say matches what a consumer receives, and the server's txn errors reach the caller
// at once (no retry), as the error table of docs/semantics.md §3 says.
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "client/client_internal.h"
#include "client/producer_impl.h"
#include "common/errors.h"
#include "gtest/gtest.h"
#include "kingfisher/client.h"
#include "kingfisher/consumer.h"
#include "kingfisher/producer.h"
#include "message/builders.h"
#include "server_process.h"

namespace kf {
namespace {

using testing::ServerProcess;
using testing::TempDir;

class TxnE2E : public ::testing::Test {
 protected:
  // Small, so that a transaction can outgrow what one message may be.
  static constexpr size_t kMaxPayloadBytes = 64 << 10;

  static void SetUpTestSuite() {
    dir_ = new TempDir();
    server_ = new ServerProcess(
        {.data_dir = dir_->path() + "/data",
         .extra_args = {"--max-payload-bytes", std::to_string(kMaxPayloadBytes)}});
    ASSERT_TRUE(server_->Start()) << server_->Output();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete dir_;
  }
  void SetUp() override {
    if (server_ == nullptr || server_->pid() <= 0) GTEST_SKIP() << "server did not start";
    auto c = kingfisher::Client::Connect({.endpoint = server_->address()});
    ASSERT_TRUE(c.ok()) << c.status();
    client_ = *std::move(c);
    producer_ = *client_->CreateProducer();
  }

  static kingfisher::Message Insert(const std::string& vchannel, std::string payload) {
    kingfisher::Message m{
        .type = MessageType::kInsert, .vchannel = vchannel, .payload = std::move(payload)};
    return m;
  }

  static TempDir* dir_;
  static ServerProcess* server_;
  std::unique_ptr<kingfisher::Client> client_;
  std::unique_ptr<kingfisher::Producer> producer_;
};

TempDir* TxnE2E::dir_ = nullptr;
ServerProcess* TxnE2E::server_ = nullptr;

TEST_F(TxnE2E, CommittedTxnIsConsumedAsOneTxnMatchingTheAcks) {
  const std::string v = "kf-dml_1_txn_e2e";
  auto txn = producer_->BeginTxn(v);
  ASSERT_TRUE(txn.ok()) << txn.status();
  std::set<MessageId> body_ids;
  for (const char* p : {"b1", "b2"}) {
    auto r = (*txn)->AppendSync(Insert(v, p));
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->txn_id, (*txn)->txn_id());
    body_ids.insert(r->id);
  }
  auto commit = (*txn)->Commit();
  ASSERT_TRUE(commit.ok()) << commit.status();
  EXPECT_EQ(commit->txn_id, (*txn)->txn_id());

  auto consumer =
      *client_->CreateConsumer({.vchannel = v, .policy = kingfisher::DeliverPolicy::All()});
  kingfisher::ConsumedMessage m;
  do {
    auto next = consumer->Next(kingfisher::Clock::now() + std::chrono::seconds(20));
    ASSERT_TRUE(next.ok()) << next.status();
    m = *std::move(next);
  } while (m.type == MessageType::kTimeTick);
  ASSERT_EQ(m.type, MessageType::kTxn);
  EXPECT_EQ(m.id, commit->id);  // delivered at the commit, with its id and timetick
  EXPECT_EQ(m.timetick, commit->timetick);
  EXPECT_EQ(m.txn_id(), (*txn)->txn_id());
  ASSERT_EQ(m.messages.size(), 4u);
  EXPECT_EQ(m.messages[0].type, MessageType::kBeginTxn);
  EXPECT_EQ(m.messages[1].payload, "b1");
  EXPECT_EQ(m.messages[2].payload, "b2");
  EXPECT_EQ(m.messages[3].type, MessageType::kCommitTxn);
  EXPECT_EQ((std::set<MessageId>{m.messages[1].id, m.messages[2].id}), body_ids);
}

// A message of the full model (`_tx` set by hand) goes through the library's own entry point.
TEST_F(TxnE2E, BodyOfAnUnknownTxnFailsAtOnce) {
  MutableMessage body(MessageType::kInsert, "x");
  body.set_vchannel("kf-dml_1_txn_e2e_unknown");
  kingfisher::v1::TxnContext ctx;
  ctx.set_txn_id(12345);
  body.set_txn(ctx);
  auto r = client::NewProducer(*client_)->AppendMessageSync(body, absl::InfinitePast(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
  EXPECT_EQ(GetStreamingCode(r.status()), StreamingCode::kInvalidTransactionState) << r.status();
}

TEST_F(TxnE2E, CommitOfARolledBackTxnFailsAtOnce) {
  const std::string v = "kf-dml_1_txn_e2e_rolled_back";
  auto txn = producer_->BeginTxn(v);
  ASSERT_TRUE(txn.ok()) << txn.status();
  ASSERT_TRUE((*txn)->AppendSync(Insert(v, "b1")).ok());
  // Rolled back behind the Transaction's back (as another client holding the id could).
  ASSERT_TRUE(
      client::NewProducer(*client_)
          ->AppendMessageSync(NewRollbackTxnMessage(v, (*txn)->txn_id()), absl::InfinitePast(), {})
          .ok());
  auto commit = (*txn)->Commit();
  ASSERT_FALSE(commit.ok());
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kFailedPrecondition) << commit.status();
  EXPECT_EQ(GetStreamingCode(commit.status()), StreamingCode::kInvalidTransactionState)
      << commit.status();
}

// A committed transaction is delivered (and replicated) as one message, so it is bounded like
// one: a body that would take it past max_payload_bytes is refused, and what was appended stays
// readable. Unbounded, 80 bodies of 60 KiB were acknowledged and committed, and no consumer could
// ever read the vchannel past them (the Txn exceeded what the server may send).
TEST_F(TxnE2E, ATransactionIsBoundedLikeOneMessage) {
  const std::string v = "kf-dml_2_txn_e2e_large";
  const std::string body(60 << 10, 'b');

  auto fits = producer_->BeginTxn(v);
  ASSERT_TRUE(fits.ok()) << fits.status();
  ASSERT_TRUE((*fits)->AppendSync(Insert(v, body)).ok());
  auto committed = (*fits)->Commit();
  ASSERT_TRUE(committed.ok()) << committed.status();

  auto too_large = producer_->BeginTxn(v);
  ASSERT_TRUE(too_large.ok()) << too_large.status();
  absl::Status refused;
  for (int i = 0; i < 80 && refused.ok(); ++i) {
    refused = (*too_large)->AppendSync(Insert(v, body)).status();
  }
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_NE(refused.message().find("past its limit"), std::string::npos) << refused;
  auto commit = (*too_large)->Commit();  // the failed body's error; rolled back
  EXPECT_EQ(commit.status().code(), absl::StatusCode::kInvalidArgument) << commit.status();
  auto after = producer_->AppendSync(Insert(v, "after"));
  ASSERT_TRUE(after.ok()) << after.status();

  auto consumer =
      *client_->CreateConsumer({.vchannel = v, .policy = kingfisher::DeliverPolicy::All()});
  std::vector<kingfisher::ConsumedMessage> got;
  while (got.empty() || got.back().id != after->id) {
    auto next = consumer->Next(kingfisher::Clock::now() + std::chrono::seconds(20));
    ASSERT_TRUE(next.ok()) << next.status() << " after " << got.size() << " messages";
    if (next->type != MessageType::kTimeTick) got.push_back(*std::move(next));
  }
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].type, MessageType::kTxn);
  EXPECT_EQ(got[0].id, committed->id);
  ASSERT_EQ(got[0].messages.size(), 3u);
  EXPECT_EQ(got[0].messages[1].payload, body);
  EXPECT_EQ(got[1].payload, "after");
}

}  // namespace
}  // namespace kf
