#include "trace/tracer.h"

#include <utility>

#include "trace/id_generator.h"
#include "trace/recording_span.h"
#include "trace/sdk_tracer_provider.h"

namespace kf::trace {
namespace {

// The default provider: one shared tracer per scope is not needed, ids are all it provides.
class NoopTracerProvider final : public TracerProvider {
 public:
  std::shared_ptr<Tracer> GetTracer(std::string_view scope) override {
    if (scope == kWalTracerScope) return wal_tracer_;
    return std::make_shared<Tracer>(std::string(scope));
  }
  bool ForceFlush(absl::Duration) override { return true; }
  void Shutdown() override {}

 private:
  const std::shared_ptr<Tracer> wal_tracer_ =
      std::make_shared<Tracer>(std::string(kWalTracerScope));
};

struct Global {
  absl::Mutex mu;
  std::shared_ptr<TracerProvider> noop = std::make_shared<NoopTracerProvider>();
  std::shared_ptr<TracerProvider> provider ABSL_GUARDED_BY(mu) = noop;
};

Global& GetGlobal() {
  // Never destroyed: spans may still be started by threads that outlive static destruction.
  static Global* g = new Global();
  return *g;
}

}  // namespace

Tracer::Tracer(std::string scope) : scope_(std::move(scope)) {}

Tracer::Tracer(std::string scope, std::shared_ptr<const sdk::TracerPipeline> pipeline)
    : scope_(std::move(scope)), pipeline_(std::move(pipeline)) {}

std::pair<Context, std::shared_ptr<Span>> Tracer::StartSpan(const Context& parent,
                                                            std::string_view name, SpanKind kind,
                                                            AttributeList attrs) noexcept {
  const SpanContext parent_sc = parent.span_context();
  SpanContext sc;
  sc.trace_id = parent_sc.IsValid() ? parent_sc.trace_id : GenerateTraceId();
  sc.span_id = GenerateSpanId();
  sc.trace_flags = parent_sc.IsValid() ? parent_sc.trace_flags : 0;

  try {
    const bool sdk = pipeline_ && !pipeline_->shut_down.load(std::memory_order_acquire);
    SamplingDecision decision = SamplingDecision::kDrop;
    if (sdk) decision = pipeline_->sampler->ShouldSample(parent_sc, sc.trace_id, name, kind);
    if (decision == SamplingDecision::kRecordAndSample) {
      sc.trace_flags |= kTraceFlagSampled;
    } else if (sdk) {
      sc.trace_flags &= static_cast<uint8_t>(~kTraceFlagSampled);
    }
    std::shared_ptr<Span> span;
    if (decision == SamplingDecision::kDrop) {
      // The cheap path (tracing off or sampled out): one allocation, nothing recorded.
      span = std::make_shared<NonRecordingSpan>(sc);
    } else {
      SpanData data;
      data.name = std::string(name);
      data.kind = kind;
      data.context = sc;
      if (parent_sc.IsValid()) {
        data.parent_span_id = parent_sc.span_id;
        data.parent_remote = parent_sc.remote;
      }
      data.start_unix_nanos = NowUnixNanos();
      for (auto& [k, v] : attrs) {
        if (data.attributes.size() >= kMaxSpanAttributes && !data.attributes.contains(k)) {
          ++data.dropped_attributes_count;
          continue;
        }
        data.attributes.insert_or_assign(std::move(k), std::move(v));
      }
      data.scope = scope_;
      data.resource = pipeline_->resource;
      span = std::make_shared<RecordingSpan>(std::move(data), pipeline_);
    }
    return {parent.WithSpan(span), span};
  } catch (...) {
    // Allocation failure: the parent unchanged and the shared background span (safe to End).
    return {parent, Context().span()};
  }
}

TracerProvider::~TracerProvider() = default;

std::shared_ptr<TracerProvider> GetTracerProvider() {
  Global& g = GetGlobal();
  absl::ReaderMutexLock lock(&g.mu);
  return g.provider;
}

void SetTracerProvider(std::shared_ptr<TracerProvider> provider) {
  Global& g = GetGlobal();
  absl::MutexLock lock(&g.mu);
  g.provider = provider ? std::move(provider) : g.noop;
}

std::shared_ptr<Tracer> WalTracer() { return GetTracerProvider()->GetTracer(kWalTracerScope); }

}  // namespace kf::trace
