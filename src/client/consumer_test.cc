#include <chrono>
#include <string>
#include <vector>

#include "client/fake_streaming_node.h"
#include "common/text_codec.h"
#include "gtest/gtest.h"
#include "kingfisher/client.h"
#include "message/message_trace.h"
#include "trace/testing/scoped_in_memory_tracing.h"

namespace kf::client {
namespace {

using testing::ConnectTo;
using testing::FakeStreamingNode;
namespace v1 = kingfisher::v1;

MutableMessage WireMessage(MessageType type, uint64_t tt, const trace::Context& source = {}) {
  MutableMessage m(type, "p");
  if (type != MessageType::kTimeTick) m.set_vchannel("kf-dml_0_orders");
  m.set_timetick(TimeTick(tt));
  InjectTraceContext(source, &m);
  return m;
}

kingfisher::ConsumerOptions AllOf(std::string vchannel) {
  kingfisher::ConsumerOptions o;
  o.vchannel = std::move(vchannel);
  o.policy = kingfisher::DeliverPolicy::All();
  return o;
}

TEST(ConsumerTest, ResumesAfterTransportFailureWithoutGapOrDuplicate) {
  FakeStreamingNode node;
  std::vector<MutableMessage> log;
  for (int i = 0; i < 10; ++i) log.push_back(WireMessage(MessageType::kInsert, 100 + i));
  // The 4th message's LCMID is the 2nd (a txn begun there was still open).
  MutableMessage lc;
  lc.set_last_confirmed(MessageId::Local(2));
  log[3].SetProperty(std::string(prop::kLastConfirmed),
                     std::string(*lc.GetProperty(prop::kLastConfirmed)));
  node.SetConsumeLog(log);
  node.BreakFirstConsumeStreamAfter(4);
  auto client = ConnectTo(node);
  auto consumer = *client->CreateConsumer(AllOf("kf-dml_0_orders"));
  for (uint64_t i = 1; i <= 10; ++i) {
    auto m = consumer->Next(kingfisher::Clock::now() + std::chrono::seconds(30));
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->id, MessageId::Local(i));
    EXPECT_EQ(m->type, MessageType::kInsert);
    EXPECT_EQ(m->timetick, TimeTick(99 + i));
    EXPECT_EQ(m->vchannel, "kf-dml_0_orders");
    EXPECT_EQ(m->payload, "p");
  }
  auto more = consumer->Next(kingfisher::Clock::now() + std::chrono::milliseconds(50));
  EXPECT_EQ(more.status().code(), absl::StatusCode::kDeadlineExceeded);

  auto creates = node.consume_creates();
  ASSERT_EQ(creates.size(), 2u);
  EXPECT_EQ(creates[0].pchannel(), "kf-dml_0");
  EXPECT_EQ(creates[0].vchannel(), "kf-dml_0_orders");
  EXPECT_EQ(creates[0].policy().kind(), v1::DeliverPolicy::ALL);
  // Resume from the last delivered message's LCMID, keeping what is later than its timetick.
  EXPECT_EQ(creates[1].policy().kind(), v1::DeliverPolicy::START_FROM);
  EXPECT_EQ(*MessageId::Decode(creates[1].policy().message_id()), MessageId::Local(2));
  ASSERT_EQ(creates[1].filters_size(), 1);
  EXPECT_EQ(creates[1].filters(0).timetick_gt(), 103u);
}

TEST(ConsumerTest, PolicyIsSentAsGiven) {
  FakeStreamingNode node;
  std::vector<MutableMessage> log;
  for (int i = 0; i < 5; ++i) log.push_back(WireMessage(MessageType::kInsert, 100 + i));
  node.SetConsumeLog(log);
  auto client = ConnectTo(node);
  auto o = AllOf("kf-dml_0_orders");
  o.policy = kingfisher::DeliverPolicy::StartFrom(MessageId::Local(3));
  auto consumer = *client->CreateConsumer(o);
  auto m = consumer->Next(kingfisher::Clock::now() + std::chrono::seconds(30));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->id, MessageId::Local(3));
}

TEST(ConsumerTest, CloseWakesNextAndIsSticky) {
  FakeStreamingNode node;
  auto client = ConnectTo(node);
  auto consumer = *client->CreateConsumer(AllOf("kf-dml_0_orders"));
  consumer->Close();
  EXPECT_EQ(consumer->Next(kingfisher::Deadline::max()).status().code(),
            absl::StatusCode::kCancelled);
}

TEST(ConsumerTest, RejectsBadVChannelAndPolicyLocally) {
  FakeStreamingNode node;
  auto client = ConnectTo(node);
  EXPECT_EQ(client->CreateConsumer(AllOf("orders")).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto o = AllOf("kf-dml_0_orders");
  o.policy = kingfisher::DeliverPolicy::StartAfter(MessageId());
  EXPECT_EQ(client->CreateConsumer(o).status().code(), absl::StatusCode::kInvalidArgument);
  // A pchannel name reads the whole pchannel.
  EXPECT_TRUE(client->CreateConsumer(AllOf("kf-dml_2")).ok());
}

// docs/tracing.md §8 scenario 13: one wal.dist_consume (CONSUMER, child of the source) per non-txn
// message, the delivered `_tc` equals it; TimeTick: no span.
TEST(ConsumerTest, DistConsumeSpanPerMessageAndNoneForTimeTick) {
  trace::testing::ScopedInMemoryTracing tracing;
  auto [source, source_span] = trace::WalTracer()->StartSpan(trace::Context(), "source");
  source_span->End();
  FakeStreamingNode node;
  node.SetConsumeLog({WireMessage(MessageType::kInsert, 100, source),
                      WireMessage(MessageType::kTimeTick, 101),
                      WireMessage(MessageType::kDelete, 102, source)});
  auto client = ConnectTo(node);
  auto consumer = *client->CreateConsumer(AllOf("kf-dml_0_orders"));
  std::vector<kingfisher::ConsumedMessage> got;
  for (int i = 0; i < 3; ++i) {
    auto m = consumer->Next(kingfisher::Clock::now() + std::chrono::seconds(30));
    ASSERT_TRUE(m.ok()) << m.status();
    got.push_back(*std::move(m));
  }
  auto spans = tracing.SpansNamed("wal.dist_consume");
  ASSERT_EQ(spans.size(), 2u);
  for (auto& s : spans) {
    EXPECT_EQ(s.kind, trace::SpanKind::kConsumer);
    EXPECT_EQ(s.parent_span_id, source_span->context().span_id);
    EXPECT_EQ(s.context.trace_id, source_span->context().trace_id);
  }
  for (int i : {0, 2}) {
    MutableMessage delivered;
    for (auto& [k, v] : got[i].properties) delivered.SetProperty(k, v);
    auto sc = ExtractTraceContext(trace::Context(), delivered).span_context();
    EXPECT_EQ(sc.span_id, spans[i == 0 ? 0 : 1].context.span_id);
    EXPECT_EQ(got[i].trace.span_id, sc.span_id.bytes);
  }
  EXPECT_EQ(got[1].type, MessageType::kTimeTick);
  EXPECT_FALSE(got[1].properties.contains("_tc"));
  EXPECT_FALSE(got[1].trace.valid());
}

TEST(ConsumerTest, TxnGetsOneSpanAndItsInnerMessagesShareIt) {
  trace::testing::ScopedInMemoryTracing tracing;
  auto [source, source_span] = trace::WalTracer()->StartSpan(trace::Context(), "source");
  source_span->End();
  FakeStreamingNode node;
  node.SetConsumeLog({WireMessage(MessageType::kTxn, 102, source)});
  node.SetConsumeInner(0, {WireMessage(MessageType::kBeginTxn, 100, source),
                           WireMessage(MessageType::kInsert, 101, source),
                           WireMessage(MessageType::kCommitTxn, 102, source)});
  auto client = ConnectTo(node);
  auto consumer = *client->CreateConsumer(AllOf("kf-dml_0_orders"));
  auto m = consumer->Next(kingfisher::Clock::now() + std::chrono::seconds(30));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->type, MessageType::kTxn);
  auto spans = tracing.SpansNamed("wal.dist_consume");
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].parent_span_id, source_span->context().span_id);
  ASSERT_EQ(m->messages.size(), 3u);
  EXPECT_EQ(m->messages[0].type, MessageType::kBeginTxn);
  EXPECT_EQ(m->messages[2].type, MessageType::kCommitTxn);
  const std::string& tc = m->properties.at("_tc");
  for (auto& inner : m->messages) EXPECT_EQ(inner.properties.at("_tc"), tc);
  EXPECT_EQ(m->trace.span_id, spans[0].context.span_id.bytes);
}

}  // namespace
}  // namespace kf::client
