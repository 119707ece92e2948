#include "trace/tracer.h"

#include <gtest/gtest.h>

#include <latch>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "trace/in_memory_span_exporter.h"
#include "trace/sampler.h"
#include "trace/sdk_tracer_provider.h"
#include "trace/span_processor.h"
#include "trace/traceparent.h"

namespace kf::trace {
namespace {

SpanContext RemoteContext(uint8_t flags) {
  auto sc = ParseTraceparent("00-0102030405060708090a0b0c0d0e0f10-1112131415161718-00");
  sc->trace_flags = flags;
  return *sc;
}

TEST(ContextTest, BackgroundHasNoSpan) {
  Context ctx;
  ASSERT_NE(ctx.span(), nullptr);
  EXPECT_FALSE(ctx.span_context().IsValid());
  EXPECT_FALSE(ctx.span()->IsRecording());
  ctx.span()->End();  // safe
  ctx.span()->RecordError(absl::InternalError("x"));
}

TEST(ContextTest, WithRemoteParent) {
  SpanContext sc = RemoteContext(1);
  sc.remote = false;
  Context ctx = Context().WithRemoteParent(sc);
  EXPECT_TRUE(ctx.span_context().remote);
  EXPECT_EQ(ctx.span_context().trace_id, sc.trace_id);
  EXPECT_EQ(ctx.span_context().span_id, sc.span_id);
  EXPECT_FALSE(ctx.span()->IsRecording());
  // An invalid context changes nothing.
  Context same = ctx.WithRemoteParent(SpanContext{});
  EXPECT_EQ(same.span(), ctx.span());
}

TEST(NoopProviderTest, GivesValidIdsAndPropagates) {
  SetTracerProvider(nullptr);
  auto tracer = WalTracer();
  ASSERT_NE(tracer, nullptr);
  EXPECT_EQ(tracer->scope(), "kingfisher.streaming.wal");

  auto [root_ctx, root] = tracer->StartSpan(Context(), "wal.autocommit", SpanKind::kProducer);
  EXPECT_FALSE(root->IsRecording());
  EXPECT_TRUE(root->context().IsValid());
  EXPECT_EQ(root->context().trace_flags, 0);
  EXPECT_EQ(root_ctx.span_context(), root->context());

  auto [child_ctx, child] = tracer->StartSpan(root_ctx, "wal.append");
  EXPECT_TRUE(child->context().IsValid());
  EXPECT_EQ(child->context().trace_id, root->context().trace_id);
  EXPECT_NE(child->context().span_id, root->context().span_id);

  // Flags are inherited from a (remote) parent, so sampling decisions made upstream survive.
  auto [c2, from_remote] = tracer->StartSpan(Context().WithRemoteParent(RemoteContext(1)), "x");
  EXPECT_EQ(from_remote->context().trace_id, RemoteContext(1).trace_id);
  EXPECT_EQ(from_remote->context().trace_flags, 1);
  EXPECT_FALSE(from_remote->context().remote);

  // Two roots never share ids.
  auto [c3, other] = tracer->StartSpan(Context(), "wal.autocommit");
  EXPECT_NE(other->context().trace_id, root->context().trace_id);
  root->End();
  child->End();
}

class SdkTracerTest : public ::testing::Test {
 protected:
  void Make(std::shared_ptr<const Sampler> sampler) {
    exporter_ = std::make_shared<InMemorySpanExporter>();
    provider_ = std::make_shared<SdkTracerProvider>(
        Attributes{{"service.name", std::string("svc")}}, std::move(sampler),
        std::make_unique<SimpleSpanProcessor>(exporter_));
    tracer_ = provider_->GetTracer(kWalTracerScope);
  }
  void SetUp() override { Make(std::make_shared<AlwaysOnSampler>()); }

  std::shared_ptr<InMemorySpanExporter> exporter_;
  std::shared_ptr<SdkTracerProvider> provider_;
  std::shared_ptr<Tracer> tracer_;
};

TEST_F(SdkTracerTest, ParentChildLinkageAndFlags) {
  auto [root_ctx, root] = tracer_->StartSpan(Context(), "wal.txn", SpanKind::kProducer,
                                             {{"message.type", std::string("Txn")}});
  EXPECT_TRUE(root->IsRecording());
  EXPECT_TRUE(root->context().IsSampled());
  auto [child_ctx, child] = tracer_->StartSpan(root_ctx, "wal.append");
  child->End();
  root->End();
  auto [rctx, remote_child] = tracer_->StartSpan(Context().WithRemoteParent(RemoteContext(1)),
                                                 "wal.dist_consume", SpanKind::kConsumer);
  remote_child->End();

  auto spans = exporter_->GetFinishedSpans();
  ASSERT_EQ(spans.size(), 3u);
  const SpanData& c = spans[0];
  const SpanData& r = spans[1];
  const SpanData& rc = spans[2];
  EXPECT_EQ(r.name, "wal.txn");
  EXPECT_EQ(r.kind, SpanKind::kProducer);
  EXPECT_FALSE(r.parent_span_id.IsValid());
  EXPECT_EQ(std::get<std::string>(r.attributes.at("message.type")), "Txn");
  EXPECT_EQ(r.scope, "kingfisher.streaming.wal");
  ASSERT_NE(r.resource, nullptr);
  EXPECT_EQ(std::get<std::string>(r.resource->attributes.at("service.name")), "svc");
  EXPECT_LE(r.start_unix_nanos, r.end_unix_nanos);

  EXPECT_EQ(c.name, "wal.append");
  EXPECT_EQ(c.context.trace_id, r.context.trace_id);
  EXPECT_EQ(c.parent_span_id, r.context.span_id);
  EXPECT_FALSE(c.parent_remote);
  EXPECT_EQ(c.context.trace_flags, kTraceFlagSampled);

  EXPECT_EQ(rc.context.trace_id, RemoteContext(1).trace_id);
  EXPECT_EQ(rc.parent_span_id, RemoteContext(1).span_id);
  EXPECT_TRUE(rc.parent_remote);
  EXPECT_EQ(rc.kind, SpanKind::kConsumer);
}

TEST_F(SdkTracerTest, StatusRulesErrorsAndEnd) {
  auto [ctx, span] = tracer_->StartSpan(Context(), "wal.append");
  span->SetAttribute("n", int64_t{7});
  span->SetAttribute("n", int64_t{8});  // last write wins
  span->SetStatus(SpanStatusCode::kUnset);
  span->RecordError(absl::UnavailableError("backend down"));
  span->RecordError(absl::OkStatus());  // no-op
  span->End();
  span->SetAttribute("late", true);  // after End: ignored
  span->SetStatus(SpanStatusCode::kOk);
  span->End();
  EXPECT_FALSE(span->IsRecording());

  auto spans = exporter_->GetFinishedSpans();
  ASSERT_EQ(spans.size(), 1u);
  const SpanData& s = spans[0];
  EXPECT_EQ(std::get<int64_t>(s.attributes.at("n")), 8);
  EXPECT_FALSE(s.attributes.contains("late"));
  EXPECT_EQ(s.status, SpanStatusCode::kError);
  EXPECT_EQ(s.status_description, "backend down");
  ASSERT_EQ(s.events.size(), 1u);
  EXPECT_EQ(s.events[0].name, "exception");
  EXPECT_EQ(std::get<std::string>(s.events[0].attributes.at("exception.message")), "backend down");
}

TEST_F(SdkTracerTest, OkIsFinal) {
  auto [ctx, span] = tracer_->StartSpan(Context(), "x");
  span->SetStatus(SpanStatusCode::kOk, "ignored");
  span->SetStatus(SpanStatusCode::kError, "too late");
  span->End();
  auto spans = exporter_->GetFinishedSpans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].status, SpanStatusCode::kOk);
  EXPECT_EQ(spans[0].status_description, "");
}

TEST_F(SdkTracerTest, DroppedSpanEndsInDestructor) {
  { auto [ctx, span] = tracer_->StartSpan(Context(), "forgotten"); }
  // The context copy held the span too; both are gone now.
  EXPECT_EQ(exporter_->GetFinishedSpans().size(), 1u);
}

TEST_F(SdkTracerTest, AlwaysOffStillPropagates) {
  Make(std::make_shared<AlwaysOffSampler>());
  auto [ctx, span] = tracer_->StartSpan(Context().WithRemoteParent(RemoteContext(1)), "x");
  EXPECT_FALSE(span->IsRecording());
  EXPECT_TRUE(span->context().IsValid());
  EXPECT_EQ(span->context().trace_id, RemoteContext(1).trace_id);
  EXPECT_FALSE(span->context().IsSampled());
  span->End();
  EXPECT_TRUE(exporter_->GetFinishedSpans().empty());
}

TEST_F(SdkTracerTest, ParentBasedDropsUnderUnsampledRemoteParent) {
  Make(std::make_shared<ParentBasedSampler>(std::make_shared<AlwaysOnSampler>()));
  auto [c1, dropped] = tracer_->StartSpan(Context().WithRemoteParent(RemoteContext(0)), "x");
  auto [c2, kept] = tracer_->StartSpan(Context().WithRemoteParent(RemoteContext(1)), "y");
  dropped->End();
  kept->End();
  auto spans = exporter_->GetFinishedSpans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(spans[0].name, "y");
}

TEST_F(SdkTracerTest, ShutdownMakesSpansNonRecording) {
  EXPECT_EQ(provider_->GetTracer(kWalTracerScope), tracer_);  // cached
  provider_->Shutdown();
  auto [ctx, span] = tracer_->StartSpan(Context(), "x");
  EXPECT_FALSE(span->IsRecording());
  EXPECT_TRUE(span->context().IsValid());
  span->End();
  EXPECT_TRUE(exporter_->GetFinishedSpans().empty());
}

TEST_F(SdkTracerTest, ConcurrentUseOfOneSpan) {
  auto [ctx, span] = tracer_->StartSpan(Context(), "x");
  constexpr int kThreads = 4;
  std::latch start(kThreads);
  std::vector<std::jthread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t, &span = span] {
      start.arrive_and_wait();
      for (int i = 0; i < 100; ++i) {
        span->SetAttribute("t" + std::to_string(t), int64_t{i});
        span->AddEvent("e");
      }
      span->End();
    });
  }
  threads.clear();
  auto spans = exporter_->GetFinishedSpans();
  ASSERT_EQ(spans.size(), 1u);  // ended exactly once
  EXPECT_LE(spans[0].events.size(), 128u);
}

TEST(GlobalProviderTest, SetAndRestore) {
  auto exporter = std::make_shared<InMemorySpanExporter>();
  auto provider = std::make_shared<SdkTracerProvider>(
      Attributes{}, nullptr, std::make_unique<SimpleSpanProcessor>(exporter));
  SetTracerProvider(provider);
  EXPECT_EQ(GetTracerProvider(), provider);
  auto [ctx, span] = WalTracer()->StartSpan(Context(), "wal.autocommit");
  span->End();
  SetTracerProvider(nullptr);
  EXPECT_NE(GetTracerProvider(), provider);
  auto spans = exporter->GetFinishedSpans();
  ASSERT_EQ(spans.size(), 1u);
  EXPECT_EQ(std::get<std::string>(spans[0].resource->attributes.at("service.name")),
            "unknown_service");
}

// Non-recording spans share per-thread blocks: every span stays itself (own context, own
// object) however the spans of a block are released, on whichever thread.
TEST(NonRecordingSpanTest, BlocksOutliveTheirSpansAcrossThreads) {
  std::vector<std::shared_ptr<Span>> spans;
  std::vector<SpanContext> contexts;
  for (int i = 0; i < 1000; ++i) {  // several blocks
    SpanContext sc;
    sc.trace_id.bytes[0] = static_cast<uint8_t>(i);
    sc.trace_id.bytes[1] = static_cast<uint8_t>(i >> 8);
    sc.span_id.bytes[0] = 1;
    sc.trace_flags = static_cast<uint8_t>(i & 1);
    spans.push_back(MakeNonRecordingSpan(sc));
    contexts.push_back(sc);
  }
  std::set<Span*> distinct;
  for (size_t i = 0; i < spans.size(); ++i) {
    EXPECT_FALSE(spans[i]->IsRecording());
    EXPECT_EQ(spans[i]->context(), contexts[i]);
    distinct.insert(spans[i].get());
  }
  EXPECT_EQ(distinct.size(), spans.size());
  // Release the odd ones here, the even ones on another thread, then check the survivors.
  std::vector<std::shared_ptr<Span>> even;
  for (size_t i = 0; i < spans.size(); i += 2) even.push_back(std::move(spans[i]));
  std::thread([moved = std::move(even)]() mutable { moved.clear(); }).join();
  for (size_t i = 1; i < spans.size(); i += 2) {
    EXPECT_EQ(spans[i]->context(), contexts[i]);
    spans[i].reset();
  }
  // Spans made on a thread that has exited stay valid.
  std::shared_ptr<Span> orphan;
  std::thread([&] { orphan = MakeNonRecordingSpan(contexts[7]); }).join();
  EXPECT_EQ(orphan->context(), contexts[7]);
}

// StartWalSpan skips the provider lookup only while the no-op provider is installed.
TEST(GlobalProviderTest, StartWalSpanFollowsTheInstalledProvider) {
  SetTracerProvider(nullptr);
  auto [noop_ctx, noop_span] = StartWalSpan(Context(), "wal.append");
  EXPECT_FALSE(noop_span->IsRecording());
  EXPECT_TRUE(noop_span->context().IsValid());
  EXPECT_EQ(noop_ctx.span(), noop_span);

  auto exporter = std::make_shared<InMemorySpanExporter>();
  auto provider = std::make_shared<SdkTracerProvider>(
      Attributes{}, nullptr, std::make_unique<SimpleSpanProcessor>(exporter));
  SetTracerProvider(provider);
  auto [ctx, span] = StartWalSpan(Context(), "wal.appendimpl");  // a sampled root
  EXPECT_TRUE(span->IsRecording());
  span->End();
  ASSERT_EQ(exporter->GetFinishedSpans().size(), 1u);
  EXPECT_EQ(exporter->GetFinishedSpans()[0].scope, kWalTracerScope);

  SetTracerProvider(nullptr);
  auto [after_ctx, after_span] = StartWalSpan(Context(), "wal.append");
  EXPECT_FALSE(after_span->IsRecording());
  after_span->End();
  EXPECT_EQ(exporter->GetFinishedSpans().size(), 1u);
}

}  // namespace
}  // namespace kf::trace
