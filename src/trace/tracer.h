// Tracer and TracerProvider (OTel-shaped API) and the process-wide provider.
//
// The global provider is the one singleton the project's conventions allow (docs/tracing.md §2).
// Its default is a no-op provider that still hands out VALID span contexts (fresh random ids,
// trace id and flags inherited from a valid parent, flags 00 for a root), so the message `_tc`
// propagates and logs correlate even when nothing is exported. No-op spans come from per-thread
// blocks (MakeNonRecordingSpan): no allocation per span.
//
// Thread-safety: all functions and methods are thread-safe.
// Ownership: providers and tracers are shared; a Tracer keeps its provider's pipeline alive.
// Errors: StartSpan never fails; after the SDK provider shut down it returns non-recording spans.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/time/time.h"
#include "trace/context.h"
#include "trace/span.h"

namespace kf::trace {

namespace sdk {
struct TracerPipeline;  // sampler + processor + resource of an SdkTracerProvider
}  // namespace sdk

// The instrumentation scope of every WAL span (docs/tracing.md §2).
inline constexpr std::string_view kWalTracerScope = "kingfisher.streaming.wal";
// The scope of search and get spans (docs/search.md): a trace of their own, not WAL spans.
inline constexpr std::string_view kSearchTracerScope = "kingfisher.search";

class Tracer {
 public:
  // A no-op tracer for `scope`.
  explicit Tracer(std::string scope);
  // A recording tracer of the SDK; a null pipeline behaves as no-op.
  Tracer(std::string scope, std::shared_ptr<const sdk::TracerPipeline> pipeline);

  const std::string& scope() const { return scope_; }

  // Starts a child of parent's current span (a root when it has none) as the sampler decides;
  // returns `parent` with the new span set, and the span. The caller ends the span.
  std::pair<Context, std::shared_ptr<Span>> StartSpan(const Context& parent, std::string_view name,
                                                      SpanKind kind = SpanKind::kInternal,
                                                      AttributeList attrs = {}) noexcept;

 private:
  const std::string scope_;
  const std::shared_ptr<const sdk::TracerPipeline> pipeline_;
};

class TracerProvider {
 public:
  virtual ~TracerProvider();
  // The tracer of instrumentation scope `scope`; providers cache them, so calling this per
  // operation is cheap.
  virtual std::shared_ptr<Tracer> GetTracer(std::string_view scope) = 0;
  // Exports everything ended so far; false when `timeout` passed first.
  virtual bool ForceFlush(absl::Duration timeout) = 0;
  // Flushes and stops exporting; later spans are non-recording. Idempotent.
  virtual void Shutdown() = 0;
};

// Never null; the default no-op provider until SetTracerProvider.
std::shared_ptr<TracerProvider> GetTracerProvider();
// Installs `provider` (null restores the no-op provider). Does not shut down the previous one.
void SetTracerProvider(std::shared_ptr<TracerProvider> provider);
// GetTracerProvider()->GetTracer(kWalTracerScope).
std::shared_ptr<Tracer> WalTracer();
// WalTracer()->StartSpan(parent, name, kind), without the provider lookup (a lock and two
// reference counts) while the default no-op provider is installed: every append starts two
// WAL spans.
std::pair<Context, std::shared_ptr<Span>> StartWalSpan(
    const Context& parent, std::string_view name, SpanKind kind = SpanKind::kInternal) noexcept;

}  // namespace kf::trace
