// The in-process fast path: a client whose route points at a Wal of its own process appends to
// and reads from it directly — nothing reaches the node over gRPC, and there is no
// wal.dist_append / wal.dist_consume (docs/tracing.md §8 scenarios 9 and 13, the local half) —
// and the `_tc` it stores is the adaptor's wal.appendimpl under wal.autocommit (scenario 6).
#include "streaming/node/local_wal_transport.h"

#include <chrono>

#include "client/fake_streaming_node.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "kingfisher/consumer.h"
#include "kingfisher/producer.h"
#include "message/message.h"
#include "message/message_trace.h"
#include "storage/tso/timestamp_allocator.h"
#include "trace/public_context.h"
#include "trace/testing/scoped_in_memory_tracing.h"
#include "trace/tracer.h"
#include "wal/testing/memory_backend.h"

namespace kf::streaming::node {
namespace {

class InProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tso_ = *TimestampAllocator::Open(dir_.path() + "/tso", {});
    wal::WalOptions o;
    o.pchannel = "kf-dml_0";
    o.tso = tso_.get();
    auto backend = std::make_unique<wal::testing::MemoryWalBackend>("kf-dml_0");
    backend_ = backend.get();
    auto w = wal::OpenWal(std::move(o), std::move(backend));
    ASSERT_TRUE(w.ok()) << w.status();
    wal_ = *std::move(w);
    // The fake node has no discovery: the router routes to it at term 0, which the lookup
    // claims as local.
    kingfisher::ClientOptions options;
    options.endpoint = node_.endpoint();
    auto client = ConnectInProcess(options, [this](const std::string& pchannel, int64_t term) {
      ++lookups_;
      return pchannel == "kf-dml_0" && term == 0 ? wal_ : nullptr;
    });
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }
  void TearDown() override {
    client_.reset();
    wal_->Close();
  }

  trace::testing::ScopedInMemoryTracing tracing_;
  client::testing::FakeStreamingNode node_;
  kf::testing::TempDir dir_{"kf-in-process"};
  std::unique_ptr<TimestampAllocator> tso_;
  wal::testing::MemoryWalBackend* backend_ = nullptr;  // owned by wal_
  std::shared_ptr<wal::Wal> wal_;
  std::atomic<int> lookups_{0};
  std::unique_ptr<kingfisher::Client> client_;
};

TEST_F(InProcessTest, AppendAndConsumeSkipTheNetwork) {
  auto producer = *client_->CreateProducer();
  kingfisher::Message m{
      .type = MessageType::kInsert, .vchannel = "kf-dml_0_raw", .payload = "local"};
  auto acked = producer->AppendSync(std::move(m));
  ASSERT_TRUE(acked.ok()) << acked.status();
  EXPECT_TRUE(node_.produce_requests().empty());  // nothing went over gRPC
  EXPECT_GT(lookups_.load(), 0);

  kingfisher::ConsumerOptions co;
  co.vchannel = "kf-dml_0_raw";
  co.policy = kingfisher::DeliverPolicy::All();
  auto consumer = *client_->CreateConsumer(co);
  absl::StatusOr<kingfisher::ConsumedMessage> got;
  do {
    got = consumer->Next(kingfisher::Clock::now() + std::chrono::seconds(10));
  } while (got.ok() && got->type == MessageType::kTimeTick);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->id, acked->id);
  EXPECT_EQ(got->payload, "local");
  EXPECT_TRUE(node_.consume_creates().empty());  // no Consume stream either
  consumer->Close();
  producer->Close();

  // wal.append is a direct child of wal.autocommit; no dist spans.
  auto autocommit = tracing_.SpansNamed("wal.autocommit");
  auto append = tracing_.SpansNamed("wal.append");
  ASSERT_EQ(autocommit.size(), 1u);
  ASSERT_EQ(append.size(), 1u);
  EXPECT_EQ(append[0].parent_span_id, autocommit[0].context.span_id);
  EXPECT_EQ(append[0].context.trace_id, autocommit[0].context.trace_id);
  EXPECT_TRUE(tracing_.SpansNamed("wal.dist_append").empty());
  EXPECT_TRUE(tracing_.SpansNamed("wal.dist_consume").empty());
}

// docs/tracing.md §8 scenario 6, in process (§5 "WAL adaptor", "Catch-up scanner", "Remote
// consumer"): request > wal.autocommit > wal.append > wal.appendimpl; the `_tc` the log stores is
// exactly wal.appendimpl's context (the adaptor overwrote wal.autocommit's), and a read of the
// log returns the wal.catchup_consume marker the scanner started under that stored context.
TEST_F(InProcessTest, TheStoredTraceContextIsTheAppendImplUnderAutocommit) {
  auto producer = *client_->CreateProducer();
  auto [caller, caller_span] = trace::WalTracer()->StartSpan(trace::Context(), "request");
  kingfisher::Message m{
      .type = MessageType::kInsert, .vchannel = "kf-dml_0_raw", .payload = "local"};
  m.trace = trace::ToPublic(caller.span_context());
  auto acked = producer->AppendSync(std::move(m));
  ASSERT_TRUE(acked.ok()) << acked.status();
  caller_span->End();

  auto autocommit = tracing_.SpansNamed("wal.autocommit");
  auto append = tracing_.SpansNamed("wal.append");
  auto appendimpl = tracing_.SpansNamed("wal.appendimpl");
  ASSERT_EQ(autocommit.size(), 1u);
  ASSERT_EQ(append.size(), 1u);
  ASSERT_EQ(appendimpl.size(), 1u);
  EXPECT_EQ(autocommit[0].parent_span_id, caller_span->context().span_id);
  EXPECT_EQ(append[0].parent_span_id, autocommit[0].context.span_id);
  EXPECT_EQ(appendimpl[0].parent_span_id, append[0].context.span_id);
  for (const auto* s : {&autocommit[0], &append[0], &appendimpl[0]}) {
    EXPECT_EQ(s->context.trace_id, caller_span->context().trace_id) << s->name;
  }

  // What the backend made durable (TimeTicks aside: never traced).
  std::vector<MutableMessage> stored;
  for (const std::string& entry : backend_->DurableEntries()) {
    auto decoded = MutableMessage::Decode(entry);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    if (decoded->type() != MessageType::kTimeTick) stored.push_back(*std::move(decoded));
  }
  ASSERT_EQ(stored.size(), 1u);
  const trace::SpanContext persisted =
      ExtractTraceContext(trace::Context(), stored[0]).span_context();
  EXPECT_EQ(persisted.trace_id, appendimpl[0].context.trace_id);
  EXPECT_EQ(persisted.span_id, appendimpl[0].context.span_id);
  EXPECT_EQ(persisted.trace_flags, appendimpl[0].context.trace_flags);
  EXPECT_NE(persisted.span_id, autocommit[0].context.span_id);

  // No reader existed during the append, so the write-ahead buffer kept nothing: this read
  // catches up from the log, and the catch-up scanner marks the message (§5).
  kingfisher::ConsumerOptions co;
  co.vchannel = "kf-dml_0_raw";
  co.policy = kingfisher::DeliverPolicy::All();
  auto consumer = *client_->CreateConsumer(co);
  absl::StatusOr<kingfisher::ConsumedMessage> got;
  do {
    got = consumer->Next(kingfisher::Clock::now() + std::chrono::seconds(10));
  } while (got.ok() && got->type == MessageType::kTimeTick);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->id, acked->id);
  consumer->Close();
  producer->Close();
  auto catchup = tracing_.SpansNamed("wal.catchup_consume");
  ASSERT_EQ(catchup.size(), 1u);
  EXPECT_EQ(catchup[0].parent_span_id, persisted.span_id);
  EXPECT_EQ(catchup[0].context.trace_id, persisted.trace_id);
  // In process the message's own context is returned (no wal.dist_consume), in `trace` and `_tc`.
  EXPECT_EQ(got->trace, trace::ToPublic(catchup[0].context));
  MutableMessage delivered;
  delivered.SetProperties(got->properties);
  const trace::SpanContext delivered_tc =
      ExtractTraceContext(trace::Context(), delivered).span_context();
  EXPECT_EQ(delivered_tc.trace_id, catchup[0].context.trace_id);
  EXPECT_EQ(delivered_tc.span_id, catchup[0].context.span_id);
  EXPECT_TRUE(tracing_.SpansNamed("wal.dist_append").empty());
  EXPECT_TRUE(tracing_.SpansNamed("wal.dist_consume").empty());
}

TEST_F(InProcessTest, BadMessageIsRejectedLikeTheNodeWould) {
  auto producer = *client_->CreateProducer();
  // A collection vchannel: the payload must decode.
  kingfisher::Message m{
      .type = MessageType::kInsert, .vchannel = "kf-dml_0_5v0", .payload = "not an insert batch"};
  auto r = producer->AppendSync(std::move(m));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_TRUE(node_.produce_requests().empty());
}

}  // namespace
}  // namespace kf::streaming::node
