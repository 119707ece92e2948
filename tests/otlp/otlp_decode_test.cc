// Acceptance test of the OTLP exporter against a decoder we did not write: spans made by our SDK
// go through OtlpHttpExporter to tests/otlp/receiver.js (protobufjs + upstream OTLP protos), and
// every decoded field is compared with what the SDK recorded.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "otlp/otlp_receiver.h"
#include "trace/batch_span_processor.h"
#include "trace/in_memory_span_exporter.h"
#include "trace/otlp_http_exporter.h"
#include "trace/sampler.h"
#include "trace/sdk_tracer_provider.h"
#include "trace/span_processor.h"
#include "trace/traceparent.h"

namespace kf::trace {
namespace {

using kf::testing::DecodedSpan;
using kf::testing::OtlpReceiver;

// Forwards each batch to the OTLP exporter and keeps a copy to compare against.
class TeeExporter final : public SpanExporter {
 public:
  explicit TeeExporter(std::shared_ptr<SpanExporter> otlp) : otlp_(std::move(otlp)) {}
  absl::Status Export(const std::vector<SpanData>& spans, absl::Time deadline) noexcept override {
    memory_->Export(spans, deadline).IgnoreError();
    absl::Status s = otlp_->Export(spans, deadline);
    if (!s.ok()) {
      absl::MutexLock lock(&mu_);
      last_error_ = s;
    }
    return s;
  }
  void Shutdown() noexcept override { otlp_->Shutdown(); }
  std::vector<SpanData> spans() const { return memory_->GetFinishedSpans(); }
  absl::Status last_error() {
    absl::MutexLock lock(&mu_);
    return last_error_;
  }

 private:
  std::shared_ptr<SpanExporter> otlp_;
  std::shared_ptr<InMemorySpanExporter> memory_ = std::make_shared<InMemorySpanExporter>();
  absl::Mutex mu_;
  absl::Status last_error_ ABSL_GUARDED_BY(mu_);
};

TEST(OtlpDecodeTest, IndependentDecoderSeesEveryField) {
  auto receiver_or = OtlpReceiver::Start();
  ASSERT_TRUE(receiver_or.ok()) << receiver_or.status();
  auto& receiver = *receiver_or;

  OtlpHttpExporterOptions options;
  options.endpoint = receiver->traces_endpoint();
  auto tee = std::make_shared<TeeExporter>(std::make_shared<OtlpHttpExporter>(options));
  SdkTracerProvider provider(
      {{"service.name", std::string("kf-decode-test")}}, std::make_shared<AlwaysOnSampler>(),
      std::make_unique<BatchSpanProcessor>(tee, BatchSpanProcessorOptions{}));
  auto wal = provider.GetTracer(kWalTracerScope);
  auto other = provider.GetTracer("kingfisher.test.other");

  // root (PRODUCER, every attribute type) > child (INTERNAL, event + error) ; and a span under a
  // remote parent (CONSUMER, other scope).
  auto [root_ctx, root] =
      wal->StartSpan(Context(), "wal.autocommit", SpanKind::kProducer,
                     {{"message.type", std::string("Insert")},
                      {"message.timetick", int64_t{-9007199254740993}},  // beyond double precision
                      {"message.replicate", true},
                      {"ratio", 0.25},
                      {"broadcast.vchannels", std::vector<std::string>{"v1", "v2", "v3"}}});
  auto [child_ctx, child] = wal->StartSpan(root_ctx, "wal.append");
  child->AddEvent("retry", {{"attempt", int64_t{2}}});
  child->RecordError(absl::UnavailableError("backend unavailable"));
  child->End();
  root->SetStatus(SpanStatusCode::kOk);
  root->End();
  auto remote = ParseTraceparent("00-0102030405060708090a0b0c0d0e0f10-1112131415161718-01");
  ASSERT_TRUE(remote);
  auto [rc_ctx, consumer] = other->StartSpan(Context().WithRemoteParent(*remote),
                                             "wal.dist_consume", SpanKind::kConsumer);
  consumer->End();

  ASSERT_TRUE(provider.ForceFlush(absl::Seconds(60)));
  ASSERT_TRUE(tee->last_error().ok()) << tee->last_error();
  const std::vector<SpanData> sent = tee->spans();
  ASSERT_EQ(sent.size(), 3u);

  // The receiver writes its lines before it answers 200, so a flushed export is on disk.
  auto decoded_or = receiver->Spans();
  ASSERT_TRUE(decoded_or.ok()) << decoded_or.status();
  ASSERT_EQ(decoded_or->size(), 3u);
  std::map<std::string, DecodedSpan> by_name;
  for (auto& d : *decoded_or) by_name[d.name] = d;

  for (const SpanData& s : sent) {
    SCOPED_TRACE(s.name);
    ASSERT_TRUE(by_name.contains(s.name));
    const DecodedSpan& d = by_name[s.name];
    EXPECT_EQ(d.trace_id, s.context.trace_id.ToHex());
    EXPECT_EQ(d.span_id, s.context.span_id.ToHex());
    EXPECT_EQ(d.parent_span_id, s.parent_span_id.IsValid() ? s.parent_span_id.ToHex() : "");
    EXPECT_EQ(d.kind, static_cast<int>(s.kind));
    EXPECT_EQ(d.start_time_unix_nano, s.start_unix_nanos);
    EXPECT_EQ(d.end_time_unix_nano, s.end_unix_nanos);
    EXPECT_EQ(d.attributes, s.attributes);
    EXPECT_EQ(d.status_code, static_cast<int>(s.status));
    EXPECT_EQ(d.status_message, s.status_description);
    EXPECT_EQ(d.scope, s.scope);
    EXPECT_EQ(d.service_name, "kf-decode-test");
    ASSERT_EQ(d.events.size(), s.events.size());
    for (size_t i = 0; i < s.events.size(); ++i) {
      EXPECT_EQ(d.events[i].name, s.events[i].name);
      EXPECT_EQ(d.events[i].time_unix_nano, s.events[i].time_unix_nanos);
      EXPECT_EQ(d.events[i].attributes, s.events[i].attributes);
    }
  }

  // And the expectations spelled out, independent of SpanData.
  const DecodedSpan& r = by_name["wal.autocommit"];
  const DecodedSpan& c = by_name["wal.append"];
  const DecodedSpan& dc = by_name["wal.dist_consume"];
  EXPECT_EQ(r.parent_span_id, "");
  EXPECT_EQ(r.kind, 4);
  EXPECT_EQ(r.flags, 0x101u);
  EXPECT_EQ(r.status_code, 1);
  EXPECT_EQ(std::get<std::string>(r.attributes.at("message.type")), "Insert");
  EXPECT_EQ(std::get<int64_t>(r.attributes.at("message.timetick")), -9007199254740993);
  EXPECT_EQ(std::get<bool>(r.attributes.at("message.replicate")), true);
  EXPECT_EQ(std::get<double>(r.attributes.at("ratio")), 0.25);
  EXPECT_EQ(std::get<std::vector<std::string>>(r.attributes.at("broadcast.vchannels")),
            (std::vector<std::string>{"v1", "v2", "v3"}));
  EXPECT_EQ(r.scope, "kingfisher.streaming.wal");

  EXPECT_EQ(c.trace_id, r.trace_id);
  EXPECT_EQ(c.parent_span_id, r.span_id);
  EXPECT_EQ(c.kind, 1);
  EXPECT_EQ(c.flags, 0x101u);
  EXPECT_EQ(c.status_code, 2);
  EXPECT_EQ(c.status_message, "backend unavailable");
  ASSERT_EQ(c.events.size(), 2u);
  EXPECT_EQ(c.events[0].name, "retry");
  EXPECT_EQ(std::get<int64_t>(c.events[0].attributes.at("attempt")), 2);
  EXPECT_EQ(c.events[1].name, "exception");
  EXPECT_EQ(std::get<std::string>(c.events[1].attributes.at("exception.message")),
            "backend unavailable");

  EXPECT_EQ(dc.trace_id, "0102030405060708090a0b0c0d0e0f10");
  EXPECT_EQ(dc.parent_span_id, "1112131415161718");
  EXPECT_EQ(dc.kind, 5);
  EXPECT_EQ(dc.flags, 0x301u);
  EXPECT_EQ(dc.scope, "kingfisher.test.other");
}

}  // namespace
}  // namespace kf::trace
