#include "trace/in_memory_span_exporter.h"

namespace kf::trace {

absl::Status InMemorySpanExporter::Export(const std::vector<SpanData>& spans, absl::Time) noexcept {
  try {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return absl::CancelledError("exporter shut down");
    spans_.insert(spans_.end(), spans.begin(), spans.end());
    return absl::OkStatus();
  } catch (...) {
    return absl::ResourceExhaustedError("out of memory");
  }
}

void InMemorySpanExporter::Shutdown() noexcept {
  absl::MutexLock lock(&mu_);
  shutdown_ = true;
}

std::vector<SpanData> InMemorySpanExporter::GetFinishedSpans() const {
  absl::MutexLock lock(&mu_);
  return spans_;
}

void InMemorySpanExporter::Reset() {
  absl::MutexLock lock(&mu_);
  spans_.clear();
}

}  // namespace kf::trace
