// OtlpHttpExporter: OTLP/HTTP protobuf exporter (POST ExportTraceServiceRequest to
// <endpoint>, usually http://host:4318/v1/traces) over libcurl.
//
// Retries only 429/502/503/504, honouring Retry-After (seconds or HTTP date), otherwise
// exponential backoff with jitter; every retry stays inside the export deadline. A 200 with
// partial_success is a success (logged). Failures are logged at most once per 30 s with a count.
//
// Thread-safety: Export may be called concurrently (calls are serialized on one curl handle);
// Shutdown from any thread aborts a transfer or backoff in progress.
// Ownership: owns its curl handle. Errors: Export returns UNAVAILABLE (transport, retryable codes
// exhausted), INVALID_ARGUMENT / FAILED_PRECONDITION (other HTTP codes), DEADLINE_EXCEEDED, or
// CANCELLED after Shutdown.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "trace/span_exporter.h"

namespace kf::trace {

struct OtlpHttpExporterOptions {
  std::string endpoint = "http://localhost:4318/v1/traces";
  // Per Export call, on top of the processor's deadline (OTEL_EXPORTER_OTLP[_TRACES]_TIMEOUT).
  absl::Duration timeout = absl::Seconds(10);
  // Extra request headers (OTEL_EXPORTER_OTLP[_TRACES]_HEADERS).
  std::vector<std::pair<std::string, std::string>> headers;
  int max_attempts = 5;
  absl::Duration initial_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(5);
};

class OtlpHttpExporter final : public SpanExporter {
 public:
  explicit OtlpHttpExporter(OtlpHttpExporterOptions options);
  ~OtlpHttpExporter() override;

  absl::Status Export(const std::vector<SpanData>& spans, absl::Time deadline) noexcept override;
  void Shutdown() noexcept override;

  // HTTP requests sent so far (attempts, including retries); for tests and diagnostics.
  uint64_t requests_sent() const { return requests_sent_.load(std::memory_order_relaxed); }

 private:
  struct Curl;
  struct Attempt;
  Attempt Post(const std::string& body, absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LogFailure(const absl::Status& status);

  const OtlpHttpExporterOptions options_;
  std::atomic<bool> shutdown_{false};
  std::atomic<uint64_t> requests_sent_{0};

  absl::Mutex mu_;  // one request at a time on the shared handle
  std::unique_ptr<Curl> curl_ ABSL_GUARDED_BY(mu_);

  absl::Mutex wake_mu_;  // backoff waits wake up on Shutdown
  bool wake_ ABSL_GUARDED_BY(wake_mu_) = false;

  absl::Mutex log_mu_;
  absl::Time last_log_ ABSL_GUARDED_BY(log_mu_) = absl::InfinitePast();
  uint64_t suppressed_ ABSL_GUARDED_BY(log_mu_) = 0;
};

}  // namespace kf::trace
