// The kfctl commands against the in-process fake StreamingNode (no real server): output lines,
// flushing, exit codes and the error line.
#include "cli/commands.h"

#include <cstdio>
#include <string>
#include <vector>

#include "cli/capture_testing.h"
#include "client/fake_streaming_node.h"
#include "common/errors.h"
#include "gtest/gtest.h"
#include "kingfisher/v1/message.pb.h"
#include "message/builders.h"
#include "message/payload.h"

namespace kf::cli {
namespace {

using client::testing::FakeStreamingNode;

using testing::Capture;

TEST(CommandsTest, ProducePrintsOneLinePerAckAndSendsInsertBatches) {
  FakeStreamingNode node;
  Args a;
  a.endpoint = node.endpoint();
  a.produce.vchannel = "kf-dml_2_17v0";
  a.produce.count = 6;
  a.produce.rows = 2;
  a.produce.dim = 3;
  a.produce.concurrency = 3;
  Capture out, err;
  EXPECT_EQ(RunProduce(a, out.file(), err.file()), kExitOk) << err.Text();
  auto lines = out.Lines();
  ASSERT_EQ(lines.size(), 6u);
  for (const auto& l : lines) {
    EXPECT_EQ(l.rfind(R"({"message_id":"local:)", 0), 0u) << l;
    EXPECT_NE(l.find(R"("vchannel":"kf-dml_2_17v0","txn_id":null})"), std::string::npos) << l;
  }
  auto appended = node.appended();
  ASSERT_EQ(appended.size(), 6u);
  for (const auto& m : appended) {
    auto batch = DecodeInsertBatch(m.payload());
    ASSERT_TRUE(batch.ok()) << batch.status();
    EXPECT_EQ(batch->collection_id(), 17);
    EXPECT_EQ(batch->pks_size(), 2);
    EXPECT_EQ(batch->dim(), 3u);
    EXPECT_EQ(batch->vectors_size(), 6);
  }
}

TEST(CommandsTest, ProduceServerErrorExitsOneWithCodeOnStderr) {
  FakeStreamingNode node;
  node.SetErrorInjector([](const kingfisher::v1::ProduceRequest&) {
    kingfisher::v1::Error e;
    e.set_grpc_code(static_cast<int>(absl::StatusCode::kInvalidArgument));
    e.set_streaming_code(static_cast<int>(StreamingCode::kInvalidArgument));
    e.set_message("unknown pchannel kf-dml_9");
    return std::optional<kingfisher::v1::Error>(e);
  });
  Args a;
  a.endpoint = node.endpoint();
  a.produce.vchannel = "kf-dml_9_x";
  Capture out, err;
  EXPECT_EQ(RunProduce(a, out.file(), err.file()), kExitServerError);
  EXPECT_TRUE(out.Text().empty());
  EXPECT_EQ(err.Text(), "kfctl: INVALID_ARGUMENT: unknown pchannel kf-dml_9\n");
}

Args TxnArgs(const FakeStreamingNode& node, uint64_t count) {
  Args a;
  a.endpoint = node.endpoint();
  a.produce.vchannel = "kf-dml_0_x";
  a.produce.count = count;
  a.produce.concurrency = 2;
  a.produce.txn = true;
  return a;
}

MessageType TypeOf(const kingfisher::v1::ProduceRequest& r) {
  return client::testing::SentMessage(r).type();
}

// Every request for a message of `type` is answered with `code` (nothing appended).
void FailEvery(FakeStreamingNode* node, MessageType type, StreamingCode code, std::string message) {
  node->SetErrorInjector(
      [=](const kingfisher::v1::ProduceRequest& r) -> std::optional<kingfisher::v1::Error> {
        if (TypeOf(r) != type) return std::nullopt;
        return client::testing::MakeWireError(code, message);
      });
}

TEST(CommandsTest, ProduceTxnAppendsAllInOneTxnAndPrintsTheAcksWithTheTxnId) {
  FakeStreamingNode node;
  Capture out, err;
  EXPECT_EQ(RunProduce(TxnArgs(node, 3), out.file(), err.file()), kExitOk) << err.Text();
  auto txns = node.txns();
  ASSERT_EQ(txns.size(), 1u);
  const auto& [id, txn] = *txns.begin();
  EXPECT_EQ(txn.phase, FakeStreamingNode::TxnPhase::kCommitted);
  EXPECT_EQ(txn.bodies.size(), 3u);
  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 5u);
  EXPECT_EQ(TypeOf(reqs.front()), MessageType::kBeginTxn);
  EXPECT_EQ(TypeOf(reqs.back()), MessageType::kCommitTxn);
  auto lines = out.Lines();
  ASSERT_EQ(lines.size(), 3u);
  for (const auto& l : lines) {
    EXPECT_NE(l.find(R"("vchannel":"kf-dml_0_x","txn_id":")" + std::to_string(id) + R"("})"),
              std::string::npos)
        << l;
  }
}

TEST(CommandsTest, ProduceTxnPrintsNothingWhenTheCommitFails) {
  FakeStreamingNode node;
  FailEvery(&node, MessageType::kCommitTxn, StreamingCode::kTransactionExpired, "expired");
  Capture out, err;
  EXPECT_EQ(RunProduce(TxnArgs(node, 3), out.file(), err.file()), kExitServerError);
  EXPECT_TRUE(out.Text().empty()) << out.Text();  // acks only after an acknowledged commit
  EXPECT_EQ(err.Text(), "kfctl: ABORTED (TRANSACTION_EXPIRED): expired\n");
}

TEST(CommandsTest, ProduceTxnRollbackPrintsNothingAndExitsZero) {
  FakeStreamingNode node;
  Args a = TxnArgs(node, 3);
  a.produce.rollback = true;
  Capture out, err;
  EXPECT_EQ(RunProduce(a, out.file(), err.file()), kExitOk) << err.Text();
  EXPECT_TRUE(out.Text().empty()) << out.Text();
  auto txns = node.txns();
  ASSERT_EQ(txns.size(), 1u);
  EXPECT_EQ(txns.begin()->second.phase, FakeStreamingNode::TxnPhase::kRolledBack);
  EXPECT_EQ(txns.begin()->second.bodies.size(), 3u);
  for (const auto& r : node.produce_requests()) EXPECT_NE(TypeOf(r), MessageType::kCommitTxn);
}

TEST(CommandsTest, ProduceTxnBodyFailureRollsBackAndExitsOne) {
  FakeStreamingNode node;
  FailEvery(&node, MessageType::kInsert, StreamingCode::kInvalidArgument, "bad row");
  Capture out, err;
  EXPECT_EQ(RunProduce(TxnArgs(node, 3), out.file(), err.file()), kExitServerError);
  EXPECT_TRUE(out.Text().empty());
  EXPECT_EQ(err.Text(), "kfctl: INVALID_ARGUMENT: bad row\n");
  auto txns = node.txns();
  ASSERT_EQ(txns.size(), 1u);
  EXPECT_EQ(txns.begin()->second.phase, FakeStreamingNode::TxnPhase::kRolledBack);
}

TEST(CommandsTest, ProduceRollbackWithoutTxnIsAUsageError) {
  Args a;
  a.produce.vchannel = "kf-dml_0_x";
  a.produce.rollback = true;
  Capture out, err;
  EXPECT_EQ(RunProduce(a, out.file(), err.file()), kExitUsage);
  EXPECT_EQ(err.Text(), "kfctl: usage error: --rollback needs --txn\n");
}

TEST(CommandsTest, ConsumeStopsAtLimitAndSkipsTimeTicksUnlessAsked) {
  FakeStreamingNode node;
  std::vector<MutableMessage> log;
  for (int i = 0; i < 4; ++i) {
    MutableMessage m = i % 2 == 0 ? MutableMessage(MessageType::kInsert, "opaque")
                                  : NewTimeTickMessage(TimeTick(100 + i));
    if (i % 2 == 0) {
      m.set_vchannel("kf-dml_0_x");
      m.set_timetick(TimeTick(100 + i));
    }
    log.push_back(std::move(m));
  }
  node.SetConsumeLog(log);
  Args a;
  a.endpoint = node.endpoint();
  a.consume.vchannel = "kf-dml_0_x";
  a.consume.policy = kingfisher::DeliverPolicy::All();
  a.consume.limit = 2;
  {
    Capture out, err;
    EXPECT_EQ(RunConsume(a, out.file(), err.file()), kExitOk) << err.Text();
    auto lines = out.Lines();
    ASSERT_EQ(lines.size(), 2u);
    EXPECT_EQ(lines[0].rfind(R"({"message_id":"local:1","type":"Insert","timetick":"100")", 0), 0u)
        << lines[0];
    EXPECT_NE(lines[0].find(R"("rows":null)"), std::string::npos) << lines[0];  // opaque
    EXPECT_EQ(lines[1].rfind(R"({"message_id":"local:3","type":"Insert")", 0), 0u) << lines[1];
  }
  {
    a.consume.with_timeticks = true;
    Capture out, err;
    EXPECT_EQ(RunConsume(a, out.file(), err.file()), kExitOk) << err.Text();
    auto lines = out.Lines();
    ASSERT_EQ(lines.size(), 3u);  // the TimeTick is printed but does not count
    EXPECT_NE(lines[1].find(R"("type":"TimeTick")"), std::string::npos) << lines[1];
  }
}

TEST(CommandsTest, ConsumeIdleTimeoutExitsZero) {
  FakeStreamingNode node;
  Args a;
  a.endpoint = node.endpoint();
  a.consume.vchannel = "kf-dml_0_x";
  a.consume.idle_timeout_seconds = 0.2;
  Capture out, err;
  EXPECT_EQ(RunConsume(a, out.file(), err.file()), kExitOk) << err.Text();
  EXPECT_TRUE(out.Text().empty());
  EXPECT_TRUE(err.Text().empty()) << err.Text();  // 0.2 s is short of the silence notice
}

// The fake node sends no TimeTicks: a real stream that delivers nothing for the silence
// threshold is a server gone away or stalled, and kfctl says so once, then keeps waiting.
TEST(CommandsTest, ConsumeSaysOnceOnStderrWhenNothingArrivesNotEvenATimeTick) {
  FakeStreamingNode node;
  Args a;
  a.endpoint = node.endpoint();
  a.consume.vchannel = "kf-dml_0_x";
  a.consume.idle_timeout_seconds = 0.8;
  a.consume.silence_notice_seconds = 0.1;
  Capture out, err;
  EXPECT_EQ(RunConsume(a, out.file(), err.file()), kExitOk) << err.Text();
  EXPECT_TRUE(out.Text().empty());
  auto lines = err.Lines();
  ASSERT_EQ(lines.size(), 1u) << err.Text();
  EXPECT_EQ(lines[0].rfind("kfctl: consume: nothing from the server for 0.1 s", 0), 0u) << lines[0];
  EXPECT_NE(lines[0].find("still waiting"), std::string::npos) << lines[0];
}

// The stream breaks after the first message; the consumer reconnects (backoff >= 10 ms, far
// above the 2 ms threshold) and resumes: stderr says it waited, then that the server answers.
TEST(CommandsTest, ConsumeSaysWhenTheServerAnswersAgainAfterASilence) {
  FakeStreamingNode node;
  std::vector<MutableMessage> log;
  for (int i = 0; i < 2; ++i) {
    MutableMessage m(MessageType::kInsert, "opaque");
    m.set_vchannel("kf-dml_0_x");
    m.set_timetick(TimeTick(100 + i));
    log.push_back(std::move(m));
  }
  node.SetConsumeLog(log);
  node.BreakFirstConsumeStreamAfter(1);
  Args a;
  a.endpoint = node.endpoint();
  a.consume.vchannel = "kf-dml_0_x";
  a.consume.policy = kingfisher::DeliverPolicy::All();
  a.consume.limit = 2;
  a.consume.silence_notice_seconds = 0.002;
  Capture out, err;
  EXPECT_EQ(RunConsume(a, out.file(), err.file()), kExitOk) << err.Text();
  auto printed = out.Lines();
  ASSERT_EQ(printed.size(), 2u) << out.Text();  // each message once, across the reconnect
  EXPECT_EQ(printed[0].rfind(R"({"message_id":"local:1")", 0), 0u) << printed[0];
  EXPECT_EQ(printed[1].rfind(R"({"message_id":"local:2")", 0), 0u) << printed[1];
  auto lines = err.Lines();
  ASSERT_GE(lines.size(), 2u) << err.Text();
  EXPECT_NE(err.Text().find("kfctl: consume: nothing from the server for 0.002 s"),
            std::string::npos)
      << err.Text();
  EXPECT_EQ(lines.back(), "kfctl: consume: the server answers again") << err.Text();
}

TEST(CommandsTest, StatusAgainstANodeWithoutCoordIsAServerError) {
  FakeStreamingNode node;  // serves StreamingNode only: GetStatus is UNIMPLEMENTED
  Args a;
  a.endpoint = node.endpoint();
  Capture out, err;
  EXPECT_EQ(RunStatus(a, out.file(), err.file()), kExitServerError);
  EXPECT_EQ(err.Text().rfind("kfctl: UNIMPLEMENTED", 0), 0u) << err.Text();
}

}  // namespace
}  // namespace kf::cli
