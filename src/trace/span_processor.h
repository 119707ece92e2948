// SpanProcessor: receives every recording span when it ends and decides how it reaches an
// exporter. SimpleSpanProcessor exports synchronously, one span per call (tests, debugging);
// production uses BatchSpanProcessor (batch_span_processor.h).
//
// Thread-safety: OnEnd, ForceFlush and Shutdown may be called concurrently from any thread.
// Ownership: a processor shares its exporter.
// Errors: export failures are logged by the exporter and otherwise dropped (tracing never
// fails the traced operation); ForceFlush/Shutdown return false on timeout.
#pragma once

#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "trace/span_data.h"
#include "trace/span_exporter.h"

namespace kf::trace {

class SpanProcessor {
 public:
  virtual ~SpanProcessor();
  // Every recording span, sampled or not; exporting processors keep only sampled ones.
  virtual void OnEnd(SpanData&& span) noexcept = 0;
  virtual bool ForceFlush(absl::Duration timeout) noexcept = 0;
  // Flushes, then shuts the exporter down; later spans are dropped. Idempotent.
  virtual bool Shutdown(absl::Duration timeout) noexcept = 0;
};

class SimpleSpanProcessor final : public SpanProcessor {
 public:
  // `export_timeout` bounds each synchronous export.
  explicit SimpleSpanProcessor(std::shared_ptr<SpanExporter> exporter,
                               absl::Duration export_timeout = absl::Seconds(30));
  ~SimpleSpanProcessor() override;

  void OnEnd(SpanData&& span) noexcept override;
  bool ForceFlush(absl::Duration timeout) noexcept override;
  bool Shutdown(absl::Duration timeout) noexcept override;

 private:
  const std::shared_ptr<SpanExporter> exporter_;
  const absl::Duration export_timeout_;
  absl::Mutex mu_;  // serializes exports, as the exporter contract expects
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kf::trace
