// docs/tracing.md §8 scenarios 8, 15, 16 and 17 at the broadcaster.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/synchronization/notification.h"
#include "message/message_trace.h"
#include "streaming/ddl/broadcast_task.h"
#include "streaming/ddl/broadcaster.h"
#include "streaming/ddl/testing/ddl_test_util.h"
#include "trace/testing/scoped_in_memory_tracing.h"

namespace kf::streaming::ddl {
namespace {

const std::vector<std::string> kVChannels = {"kf-dml_0_7v0", "kf-dml_1_7v1"};

class BroadcasterTraceTest : public testing::DdlTest {
 protected:
  std::unique_ptr<Broadcaster> New(AckCallback callback = nullptr) {
    Broadcaster::Options o;
    o.retry_backoff = absl::Milliseconds(1);
    o.retry_backoff_max = absl::Milliseconds(5);
    auto b = std::make_unique<Broadcaster>(faulty_.get(), keys_, revision_, &appender_, o);
    if (callback) b->RegisterCallback(MessageType::kDropCollection, std::move(callback));
    EXPECT_TRUE(b->Recover(Deadline()).ok());
    return b;
  }
  static Broadcaster::Request Req(trace::Context ctx) {
    kingfisher::v1::DropCollection drop;
    drop.set_collection_id(7);
    Broadcaster::Request r;
    r.ctx = std::move(ctx);
    r.message = MutableMessage(MessageType::kDropCollection, drop.SerializeAsString());
    r.vchannels = kVChannels;
    return r;
  }
  absl::StatusOr<Broadcaster::Result> Run(Broadcaster& b, Broadcaster::Request r) {
    auto locks = b.Lock({ResourceKey::Collection("default", "c")}, false, Deadline());
    if (!locks.ok()) return locks.status();
    return b.Broadcast(*std::move(locks), std::move(r), Deadline());
  }
  // A source span: started and ended by the test before the action.
  static trace::Context Source() {
    auto [ctx, span] = StartSpan(trace::Context(), "source");
    span->End();
    return ctx;
  }
  MutableMessage PersistedMessage(uint64_t id) {
    auto got = store_->Get(keys_.broadcast_task(id), Deadline());
    EXPECT_TRUE(got.ok());
    auto task = ParseBroadcastTask(keys_, got->kv.key, got->kv.value);
    EXPECT_TRUE(task.ok());
    return *TaskMessage(*task);
  }
  static trace::SpanContext Tc(const MutableMessage& m) {
    return ExtractTraceContext(trace::Context(), m).span_context();
  }

  trace::testing::ScopedInMemoryTracing tracing_;
  testing::FakeAppender appender_;
};

// Scenarios 8 and 15 (no caller `_tc`): `wal.broadcast` under the caller, injected into the
// task before it is persisted, parent of the appends; no wal.autocommit / wal.txn.
TEST_F(BroadcasterTraceTest, BroadcastSpanIsInjectedBeforePersistingAndParentsTheAppends) {
  auto b = New();
  const trace::Context source = Source();
  trace::SpanContext tc_at_first_append;
  appender_.set_hook([&](const MutableMessage& m) {
    if (!tc_at_first_append.IsValid()) {
      tc_at_first_append = Tc(PersistedMessage(m.broadcast_header()->broadcast_id()));
    }
  });
  auto r = Run(*b, Req(source));
  ASSERT_TRUE(r.ok()) << r.status();

  auto spans = tracing_.SpansNamed("wal.broadcast");
  ASSERT_EQ(spans.size(), 1u);
  const trace::SpanData& bc = spans[0];
  EXPECT_EQ(bc.kind, trace::SpanKind::kProducer);
  EXPECT_EQ(bc.context.trace_id, source.span_context().trace_id);
  EXPECT_EQ(bc.parent_span_id, source.span_context().span_id);
  EXPECT_EQ(std::get<int64_t>(bc.attributes.at("broadcast.id")),
            static_cast<int64_t>(r->broadcast_id));
  EXPECT_EQ(std::get<std::vector<std::string>>(bc.attributes.at("broadcast.vchannels")),
            kVChannels);
  EXPECT_EQ(std::get<std::string>(bc.attributes.at("message.type")), "DropCollection");

  // Persisted (before the first append) with the wal.broadcast context.
  EXPECT_EQ(tc_at_first_append.span_id, bc.context.span_id);
  EXPECT_EQ(Tc(PersistedMessage(r->broadcast_id)).span_id, bc.context.span_id);
  for (const auto& call : appender_.calls()) {
    EXPECT_EQ(call.parent.span_id, bc.context.span_id);
    EXPECT_EQ(Tc(call.message).span_id, bc.context.span_id);
  }
  for (const auto& s : tracing_.Spans()) {
    EXPECT_NE(s.name, "wal.autocommit");
    EXPECT_NE(s.name, "wal.txn");
  }
  EXPECT_EQ(tracing_.Spans().size(), 3u);  // source, wal.broadcast, wal.bc_callback
}

// Scenario 15: a `_tc` the caller set is kept; the appends hang under the caller's span.
TEST_F(BroadcasterTraceTest, KeepsACallerTraceContext) {
  auto b = New();
  const trace::Context source = Source();
  Broadcaster::Request r = Req(trace::Context());
  InjectTraceContext(source, &r.message);
  auto done = Run(*b, std::move(r));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(Tc(PersistedMessage(done->broadcast_id)).span_id, source.span_context().span_id);
  for (const auto& call : appender_.calls()) {
    EXPECT_EQ(call.parent.span_id, source.span_context().span_id);
  }
  auto bc = tracing_.SpansNamed("wal.broadcast");
  ASSERT_EQ(bc.size(), 1u);
  EXPECT_EQ(bc[0].parent_span_id, source.span_context().span_id);
}

// Scenario 16: the callback runs under `wal.bc_callback`, child of the message's trace.
TEST_F(BroadcasterTraceTest, CallbackRunsUnderBcCallback) {
  trace::SpanContext seen;
  auto b = New([&](const AckCallbackContext& c) -> absl::StatusOr<AckWrites> {
    seen = c.trace.span_context();
    return AckWrites{};
  });
  const trace::Context source = Source();
  auto r = Run(*b, Req(source));
  ASSERT_TRUE(r.ok()) << r.status();
  auto cb = tracing_.SpansNamed("wal.bc_callback");
  ASSERT_EQ(cb.size(), 1u);
  auto bc = tracing_.SpansNamed("wal.broadcast");
  ASSERT_EQ(bc.size(), 1u);
  EXPECT_EQ(cb[0].context.trace_id, source.span_context().trace_id);
  EXPECT_EQ(cb[0].parent_span_id, bc[0].context.span_id);  // Extract(message) = wal.broadcast
  EXPECT_EQ(seen.span_id, cb[0].context.span_id);
}

// Scenario 16, cancelled base: the callback sees the cancellation, the trace id is kept.
TEST_F(BroadcasterTraceTest, CancelledBaseReachesTheCallbackWithTheTrace) {
  absl::Notification entered;
  bool saw_stop = false;
  trace::SpanContext seen;
  auto b = New([&](const AckCallbackContext& c) -> absl::StatusOr<AckWrites> {
    seen = c.trace.span_context();
    entered.Notify();
    std::mutex m;
    std::condition_variable_any cv;
    std::unique_lock lock(m);
    cv.wait(lock, c.stop, [] { return false; });  // the callback's own long wait
    saw_stop = c.stop.stop_requested();
    return absl::CancelledError("stopped");
  });
  const trace::Context source = Source();
  absl::StatusOr<Broadcaster::Result> r = absl::UnknownError("unset");
  std::thread t([&] { r = Run(*b, Req(source)); });
  entered.WaitForNotification();
  b->Stop();
  t.join();
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(saw_stop);
  EXPECT_EQ(seen.trace_id, source.span_context().trace_id);
}

// Scenario 17: a recovered task re-appends (and calls back) under the original trace.
TEST_F(BroadcasterTraceTest, RecoveredTaskKeepsTheOriginalTrace) {
  auto b = New();
  appender_.Hold(true);
  const trace::Context source = Source();
  absl::StatusOr<Broadcaster::Result> r = absl::UnknownError("unset");
  std::thread t([&] { r = Run(*b, Req(source)); });
  ASSERT_TRUE(appender_.WaitCalls(2, Deadline()));
  b->Stop();
  t.join();
  b.reset();
  appender_.Hold(false);
  auto bc = tracing_.SpansNamed("wal.broadcast");
  ASSERT_EQ(bc.size(), 1u);
  tracing_.Reset();

  auto b2 = New();
  ASSERT_TRUE(b2->WaitIdle(Deadline()));
  auto calls = appender_.calls();
  ASSERT_EQ(calls.size(), 4u);
  for (size_t i = 2; i < 4; ++i) {
    EXPECT_EQ(calls[i].parent.trace_id, source.span_context().trace_id);
    EXPECT_EQ(calls[i].parent.span_id, bc[0].context.span_id);
  }
  EXPECT_TRUE(tracing_.SpansNamed("wal.broadcast").empty());  // no new logical root
  auto cb = tracing_.SpansNamed("wal.bc_callback");
  ASSERT_EQ(cb.size(), 1u);
  EXPECT_EQ(cb[0].context.trace_id, source.span_context().trace_id);
}

}  // namespace
}  // namespace kf::streaming::ddl
