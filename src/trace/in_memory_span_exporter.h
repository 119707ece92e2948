// InMemorySpanExporter: keeps every exported span in memory, for tests.
//
// Thread-safety: all methods are thread-safe. Ownership: shared between the processor and the
// test. Errors: Export fails only after Shutdown.
#pragma once

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "trace/span_exporter.h"

namespace kf::trace {

class InMemorySpanExporter final : public SpanExporter {
 public:
  absl::Status Export(const std::vector<SpanData>& spans, absl::Time deadline) noexcept override;
  void Shutdown() noexcept override;

  // Copies of the spans exported so far, in export order.
  std::vector<SpanData> GetFinishedSpans() const;
  void Reset();

 private:
  mutable absl::Mutex mu_;
  std::vector<SpanData> spans_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kf::trace
