// RecordingSpan: the SDK span that records into a SpanData and hands it to the provider's
// processor when it ends. Internal to kf_trace (created by Tracer::StartSpan).
//
// Thread-safety: all methods are thread-safe (one mutex per span). Ownership: shares the
// provider pipeline so End() works even after the provider object is gone.
// Errors: none; calls after End() are no-ops. A span dropped without End() is ended by the
// destructor so its data is not lost.
#pragma once

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "trace/sdk_tracer_provider.h"
#include "trace/span.h"
#include "trace/span_data.h"

namespace kf::trace {

// OTel default span limits: beyond them attributes/events are counted as dropped.
inline constexpr size_t kMaxSpanAttributes = 128;
inline constexpr size_t kMaxSpanEvents = 128;

class RecordingSpan final : public Span {
 public:
  RecordingSpan(SpanData data, std::shared_ptr<const sdk::TracerPipeline> pipeline) noexcept;
  ~RecordingSpan() override;

  SpanContext context() const noexcept override { return context_; }
  bool IsRecording() const noexcept override;
  void SetAttribute(std::string_view key, AttributeValue v) noexcept override;
  void AddEvent(std::string_view name, AttributeList attrs) noexcept override;
  void SetStatus(SpanStatusCode code, std::string_view description) noexcept override;
  void End() noexcept override;

 private:
  const SpanContext context_;  // immutable: readable without the lock
  const std::shared_ptr<const sdk::TracerPipeline> pipeline_;
  mutable absl::Mutex mu_;
  SpanData data_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
};

// Wall-clock nanoseconds since the Unix epoch (OTLP timestamps).
uint64_t NowUnixNanos() noexcept;

}  // namespace kf::trace
