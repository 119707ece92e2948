// BatchSpanProcessor: queues ended sampled spans and exports them in batches from one
// background thread (OTel semantics and defaults).
//
// A full queue drops the new span and counts it (tracing must never block or grow memory
// without bound on the WAL hot path). The worker exports when a batch is full, when
// schedule_delay passed since the last export, on ForceFlush and on Shutdown.
//
// Thread-safety: all methods are thread-safe. Ownership: shares the exporter; owns the worker
// thread (std::jthread), joined by Shutdown or the destructor.
// Errors: export failures drop the batch (the exporter logs them); ForceFlush/Shutdown return
// false when the timeout passed first.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "trace/span_processor.h"

namespace kf::trace {

struct BatchSpanProcessorOptions {
  size_t max_queue_size = 2048;                       // OTEL_BSP_MAX_QUEUE_SIZE
  absl::Duration schedule_delay = absl::Seconds(5);   // OTEL_BSP_SCHEDULE_DELAY (ms)
  size_t max_export_batch_size = 512;                 // OTEL_BSP_MAX_EXPORT_BATCH_SIZE
  absl::Duration export_timeout = absl::Seconds(30);  // OTEL_BSP_EXPORT_TIMEOUT (ms)

  // Defaults overridden by the OTEL_BSP_* variables that are set and valid (others are logged
  // and ignored); a batch size above the queue size is clamped to it.
  static BatchSpanProcessorOptions FromEnv();
};

class BatchSpanProcessor final : public SpanProcessor {
 public:
  BatchSpanProcessor(std::shared_ptr<SpanExporter> exporter, BatchSpanProcessorOptions options);
  // Shutdown(export_timeout).
  ~BatchSpanProcessor() override;

  void OnEnd(SpanData&& span) noexcept override;
  bool ForceFlush(absl::Duration timeout) noexcept override;
  bool Shutdown(absl::Duration timeout) noexcept override;

  // Spans dropped because the queue was full (or the processor shut down).
  uint64_t dropped_spans() const { return dropped_.load(std::memory_order_relaxed); }

 private:
  void Run(std::stop_token stop);
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::shared_ptr<SpanExporter> exporter_;
  const BatchSpanProcessorOptions options_;
  std::atomic<uint64_t> dropped_{0};

  mutable absl::Mutex mu_;
  std::deque<SpanData> queue_ ABSL_GUARDED_BY(mu_);
  // ForceFlush asks for generation flush_requested_; the worker reports flush_done_ once
  // everything queued before the request was exported.
  uint64_t flush_requested_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t flush_done_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;

  std::jthread worker_;  // last: starts after everything above is initialized
};

}  // namespace kf::trace
