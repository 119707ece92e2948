#include "streaming/ddl/producer_appender.h"

#include <gtest/gtest.h>

#include <chrono>

#include "absl/synchronization/notification.h"
#include "client/fake_streaming_node.h"
#include "common/errors.h"
#include "message/message_trace.h"
#include "trace/testing/scoped_in_memory_tracing.h"

namespace kf::streaming::ddl {
namespace {

using client::testing::FakeStreamingNode;
using client::testing::MakeWireError;

constexpr absl::Duration kWait = absl::Seconds(20);  // only failures wait this long

// A copy as the broadcaster hands it over: `_bh`, `_vc` and the broadcaster's `_ik`.
MutableMessage Copy(const std::string& vchannel = "kf-dml_0_7v0") {
  kingfisher::v1::DropCollection drop;
  drop.set_collection_id(7);
  MutableMessage m(MessageType::kDropCollection, drop.SerializeAsString());
  kingfisher::v1::BroadcastHeader h;
  h.set_broadcast_id(42);
  h.add_vchannels(vchannel);
  m.set_broadcast_header(h);
  m.set_vchannel(vchannel);
  m.set_idempotency_key("bc42:1");
  return m;
}

absl::StatusOr<BroadcastAppendResult> Append(ProducerAppender& appender, MutableMessage m,
                                             trace::Context ctx = {}) {
  absl::StatusOr<BroadcastAppendResult> out = absl::UnknownError("no answer");
  absl::Notification done;
  appender.AppendAsync(ctx, std::move(m), absl::Now() + kWait,
                       [&](absl::StatusOr<BroadcastAppendResult> r) {
                         out = std::move(r);
                         done.Notify();
                       });
  EXPECT_TRUE(done.WaitForNotificationWithTimeout(kWait));
  return out;
}

kingfisher::ClientOptions FastRetries() {
  kingfisher::ClientOptions o;
  o.retry.initial_backoff = std::chrono::milliseconds(1);
  o.retry.max_backoff = std::chrono::milliseconds(10);
  return o;
}

TEST(ProducerAppenderTest, SendsTheCopyAsGivenUnderOneDistAppendPerAttempt) {
  trace::testing::ScopedInMemoryTracing tracing;
  auto [source, span] = StartSpan(trace::Context(), "source");
  span->End();

  FakeStreamingNode node;
  node.FailStreamsAfterAppend(1);  // the first attempt lands but its answer is lost
  ProducerAppender appender(FastRetries());
  ASSERT_TRUE(appender.Open(node.endpoint()).ok());
  auto r = Append(appender, Copy(), source);
  ASSERT_TRUE(r.ok()) << r.status();

  const auto requests = node.produce_requests();
  ASSERT_EQ(requests.size(), 2u);
  for (const auto& req : requests) {
    const MutableMessage sent = client::testing::SentMessage(req);
    EXPECT_EQ(sent.properties().at("_ik"), "bc42:1");
    EXPECT_EQ(sent.properties().at("_vc"), "kf-dml_0_7v0");
    EXPECT_TRUE(sent.properties().contains("_bh"));
  }
  ASSERT_EQ(node.appended().size(), 1u);  // the retry was deduplicated
  EXPECT_TRUE(r->id.valid());
  EXPECT_GT(r->timetick.value(), 0u);

  EXPECT_TRUE(tracing.SpansNamed("wal.autocommit").empty());
  EXPECT_TRUE(tracing.SpansNamed("wal.txn").empty());
  const auto dist = tracing.SpansNamed("wal.dist_append");
  ASSERT_EQ(dist.size(), 2u);
  for (const auto& d : dist) {
    EXPECT_EQ(d.context.trace_id, source.span_context().trace_id);
    EXPECT_EQ(d.parent_span_id, source.span_context().span_id);
  }
}

TEST(ProducerAppenderTest, PassesTheNodesVerdictOnWithItsStreamingCode) {
  FakeStreamingNode node;
  node.SetErrorInjector([](const kingfisher::v1::ProduceRequest&) {
    return MakeWireError(StreamingCode::kCollectionNotFound, "collection 7 was dropped");
  });
  ProducerAppender appender(FastRetries());
  ASSERT_TRUE(appender.Open(node.endpoint()).ok());
  auto r = Append(appender, Copy());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kNotFound) << r.status();
  EXPECT_EQ(GetStreamingCode(r.status()), StreamingCode::kCollectionNotFound);
  EXPECT_TRUE(node.appended().empty());
}

TEST(ProducerAppenderTest, UnavailableBeforeOpenAndAfterClose) {
  FakeStreamingNode node;
  ProducerAppender appender(FastRetries());
  EXPECT_EQ(Append(appender, Copy()).status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(appender.Open(node.endpoint()).ok());
  EXPECT_EQ(appender.Open(node.endpoint()).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(Append(appender, Copy()).ok());
  appender.Close();
  EXPECT_EQ(Append(appender, Copy()).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(node.appended().size(), 1u);
}

}  // namespace
}  // namespace kf::streaming::ddl
