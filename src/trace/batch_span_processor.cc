#include "trace/batch_span_processor.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "common/absl_compat.h"
#include "spdlog/spdlog.h"

namespace kf::trace {
namespace {

// A non-negative integer variable; nullopt (logged) when set but malformed.
std::optional<uint64_t> EnvUint(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  uint64_t out;
  if (!absl::SimpleAtoi(absl::string_view(v), &out)) {
    spdlog::warn("tracing: ignoring {}={}: not a non-negative integer", name, v);
    return std::nullopt;
  }
  return out;
}

}  // namespace

BatchSpanProcessorOptions BatchSpanProcessorOptions::FromEnv() {
  BatchSpanProcessorOptions o;
  if (auto v = EnvUint("OTEL_BSP_MAX_QUEUE_SIZE"); v && *v > 0) o.max_queue_size = *v;
  if (auto v = EnvUint("OTEL_BSP_SCHEDULE_DELAY")) o.schedule_delay = absl::Milliseconds(*v);
  if (auto v = EnvUint("OTEL_BSP_MAX_EXPORT_BATCH_SIZE"); v && *v > 0) {
    o.max_export_batch_size = *v;
  }
  if (auto v = EnvUint("OTEL_BSP_EXPORT_TIMEOUT")) o.export_timeout = absl::Milliseconds(*v);
  if (o.max_export_batch_size > o.max_queue_size) o.max_export_batch_size = o.max_queue_size;
  return o;
}

BatchSpanProcessor::BatchSpanProcessor(std::shared_ptr<SpanExporter> exporter,
                                       BatchSpanProcessorOptions options)
    : exporter_(std::move(exporter)),
      options_([&] {
        if (options.max_queue_size == 0) options.max_queue_size = 1;
        // A zero delay would make the idle worker spin.
        options.schedule_delay = std::max(options.schedule_delay, absl::Milliseconds(1));
        if (options.max_export_batch_size == 0) options.max_export_batch_size = 1;
        if (options.max_export_batch_size > options.max_queue_size) {
          options.max_export_batch_size = options.max_queue_size;
        }
        return options;
      }()),
      worker_([this](std::stop_token stop) { Run(stop); }) {}

BatchSpanProcessor::~BatchSpanProcessor() { Shutdown(options_.export_timeout); }

void BatchSpanProcessor::OnEnd(SpanData&& span) noexcept {
  if (!span.context.IsSampled()) return;
  try {
    absl::MutexLock lock(&mu_);
    if (shutdown_ || queue_.size() >= options_.max_queue_size) {
      // Drop rather than block the WAL hot path or grow without bound.
      uint64_t n = dropped_.fetch_add(1, std::memory_order_relaxed);
      if ((n & (n + 1)) == 0) {  // 1st, 2nd, 4th, 8th ... drop: logs stay quiet under load
        spdlog::warn("tracing: span queue full (max {}), {} span(s) dropped so far",
                     options_.max_queue_size, n + 1);
      }
      return;
    }
    queue_.push_back(std::move(span));
  } catch (...) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

bool BatchSpanProcessor::HasWork() const {
  return stopping_ || flush_requested_ > flush_done_ ||
         queue_.size() >= options_.max_export_batch_size;
}

void BatchSpanProcessor::Run(std::stop_token stop) {
  absl::MutexLock lock(&mu_);
  while (true) {
    // Wake on a full batch, a flush request or stop; otherwise export every schedule_delay.
    mu_.AwaitWithTimeout(absl::Condition(this, &BatchSpanProcessor::HasWork),
                         options_.schedule_delay);
    const uint64_t flush_target = flush_requested_;
    const bool stopping = stopping_ || stop.stop_requested();
    // Drain what is queued now (all of it when flushing or stopping, else one batch's worth
    // at a time until less than a full batch remains, then wait again).
    const bool drain_all = stopping || flush_target > flush_done_;
    do {
      std::vector<SpanData> batch;
      const size_t n = std::min(queue_.size(), options_.max_export_batch_size);
      batch.reserve(n);
      for (size_t i = 0; i < n; ++i) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      if (!batch.empty()) {
        mu_.Unlock();
        // Failures are logged by the exporter; the batch is dropped (no unbounded retry).
        exporter_->Export(batch, absl::Now() + options_.export_timeout).IgnoreError();
        mu_.Lock();
      }
    } while (!queue_.empty() && (drain_all || queue_.size() >= options_.max_export_batch_size));
    if (flush_target > flush_done_) flush_done_ = flush_target;
    if (stopping) return;
  }
}

bool BatchSpanProcessor::ForceFlush(absl::Duration timeout) noexcept {
  absl::MutexLock lock(&mu_);
  if (stopping_) return queue_.empty();
  const uint64_t target = ++flush_requested_;
  auto done = [this, target]()
                  ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return flush_done_ >= target || stopping_; };
  return mu_.AwaitWithTimeout(absl::Condition(&done), timeout) && flush_done_ >= target;
}

bool BatchSpanProcessor::Shutdown(absl::Duration timeout) noexcept {
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return true;
    shutdown_ = true;  // new spans are dropped from here on
  }
  const bool flushed = ForceFlush(timeout);
  // Abort whatever export is still running (a hung collector must not block the process).
  exporter_->Shutdown();
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (worker_.joinable()) {
    worker_.request_stop();
    worker_.join();
  }
  return flushed;
}

}  // namespace kf::trace
