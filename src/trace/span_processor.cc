#include "trace/span_processor.h"

#include <utility>
#include <vector>

#include "absl/time/clock.h"

namespace kf::trace {

SpanProcessor::~SpanProcessor() = default;
SpanExporter::~SpanExporter() = default;

SimpleSpanProcessor::SimpleSpanProcessor(std::shared_ptr<SpanExporter> exporter,
                                         absl::Duration export_timeout)
    : exporter_(std::move(exporter)), export_timeout_(export_timeout) {}

SimpleSpanProcessor::~SimpleSpanProcessor() { Shutdown(export_timeout_); }

void SimpleSpanProcessor::OnEnd(SpanData&& span) noexcept {
  if (!span.context.IsSampled()) return;
  try {
    std::vector<SpanData> batch;
    batch.push_back(std::move(span));
    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    // The status is logged by the exporter; a lost span must not fail the traced operation.
    exporter_->Export(batch, absl::Now() + export_timeout_).IgnoreError();
  } catch (...) {
  }
}

bool SimpleSpanProcessor::ForceFlush(absl::Duration) noexcept { return true; }

bool SimpleSpanProcessor::Shutdown(absl::Duration) noexcept {
  // Abort a retry in progress first so the lock below is not held for a whole export.
  exporter_->Shutdown();
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
  return true;
}

}  // namespace kf::trace
