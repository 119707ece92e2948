#include "trace/tracer.h"

#include <atomic>
#include <utility>

#include "trace/id_generator.h"
#include "trace/recording_span.h"
#include "trace/sdk_tracer_provider.h"

namespace kf::trace {
namespace {

// The default provider: one shared tracer per scope is not needed, ids are all it provides.
class NoopTracerProvider final : public TracerProvider {
 public:
  Tracer& wal_tracer() const { return *wal_tracer_; }
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
  const std::shared_ptr<NoopTracerProvider> noop = std::make_shared<NoopTracerProvider>();
  std::shared_ptr<TracerProvider> provider ABSL_GUARDED_BY(mu) = noop;
  // provider == noop. Read without the lock: a span started while SetTracerProvider runs may
  // come from either provider, exactly as if the lookup had happened a moment earlier.
  std::atomic<bool> noop_installed{true};
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
      // The cheap path (tracing off or sampled out): nothing recorded, no allocation per span.
      span = MakeNonRecordingSpan(sc);
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
    Context child = parent.WithSpan(span);
    return {std::move(child), std::move(span)};
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
  g.noop_installed.store(g.provider == g.noop, std::memory_order_release);
}

std::shared_ptr<Tracer> WalTracer() { return GetTracerProvider()->GetTracer(kWalTracerScope); }

std::pair<Context, std::shared_ptr<Span>> StartWalSpan(const Context& parent, std::string_view name,
                                                       SpanKind kind) noexcept {
  Global& g = GetGlobal();
  // The no-op provider and its tracer are immortal (Global is never destroyed).
  if (g.noop_installed.load(std::memory_order_acquire)) {
    return g.noop->wal_tracer().StartSpan(parent, name, kind);
  }
  return WalTracer()->StartSpan(parent, name, kind);
}

}  // namespace kf::trace
