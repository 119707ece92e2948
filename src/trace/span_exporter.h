// SpanExporter: the sink a span processor hands batches of ended, sampled spans to.
//
// Thread-safety: implementations must accept concurrent calls (processors normally serialize
// Export, but ForceFlush/Shutdown may come from other threads).
// Ownership: processors share their exporter (tests keep a handle to read what was exported).
// Errors: Export returns a non-OK status when the batch was not delivered; the processor drops
// the batch (retries happen inside the exporter, bounded by `deadline`).
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "trace/span_data.h"

namespace kf::trace {

class SpanExporter {
 public:
  virtual ~SpanExporter();
  virtual absl::Status Export(const std::vector<SpanData>& spans, absl::Time deadline) noexcept = 0;
  // Stops accepting batches and aborts pending retries; idempotent.
  virtual void Shutdown() noexcept = 0;
};

}  // namespace kf::trace
