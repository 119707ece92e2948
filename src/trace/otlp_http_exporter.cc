#include "trace/otlp_http_exporter.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/absl_compat.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "spdlog/spdlog.h"
#include "trace/otlp_encoding.h"

namespace kf::trace {
namespace {

constexpr absl::Duration kLogInterval = absl::Seconds(30);

void GlobalInitCurl() {
  // curl_global_init is not thread-safe; every exporter goes through here once.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool IsRetryable(long http_status) {
  return http_status == 429 || http_status == 502 || http_status == 503 || http_status == 504;
}

// Retry-After is either delay-seconds or an HTTP date (RFC 9110 §10.2.3).
std::optional<absl::Duration> ParseRetryAfter(std::string_view value) {
  absl::string_view v = absl::StripAsciiWhitespace(ToAbsl(value));
  uint64_t seconds;
  if (absl::SimpleAtoi(v, &seconds)) return absl::Seconds(static_cast<int64_t>(seconds));
  absl::Time t;
  std::string err;
  if (absl::ParseTime("%a, %d %b %Y %H:%M:%S GMT", std::string(v), absl::UTCTimeZone(), &t, &err)) {
    return std::max(absl::ZeroDuration(), t - absl::Now());
  }
  return std::nullopt;
}

absl::Duration Jittered(absl::Duration backoff) {
  // Uniform in [backoff/2, backoff*3/2): exporters restarted together do not retry in lockstep.
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> dist(0.5, 1.5);
  return backoff * dist(rng);
}

}  // namespace

struct OtlpHttpExporter::Curl {
  CURL* handle = nullptr;
  curl_slist* headers = nullptr;
  ~Curl() {
    if (headers != nullptr) curl_slist_free_all(headers);
    if (handle != nullptr) curl_easy_cleanup(handle);
  }
};

struct OtlpHttpExporter::Attempt {
  CURLcode curl_code = CURLE_OK;
  std::string curl_error;
  long http_status = 0;
  std::string body;
  std::optional<absl::Duration> retry_after;
};

namespace {

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* retry_after = static_cast<std::optional<absl::Duration>*>(user);
  std::string_view line(data, size * n);
  if (line.starts_with("HTTP/")) retry_after->reset();  // a new response (e.g. after 100)
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size() &&
      absl::EqualsIgnoreCase(ToAbsl(line.substr(0, kName.size())), ToAbsl(kName))) {
    *retry_after = ParseRetryAfter(line.substr(kName.size()));
  }
  return size * n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  // Non-zero aborts the transfer: Shutdown must not wait for a hung collector.
  return static_cast<std::atomic<bool>*>(user)->load(std::memory_order_relaxed) ? 1 : 0;
}

}  // namespace

OtlpHttpExporter::OtlpHttpExporter(OtlpHttpExporterOptions options) : options_(std::move(options)) {
  GlobalInitCurl();
  auto curl = std::make_unique<Curl>();
  curl->handle = curl_easy_init();
  curl->headers = curl_slist_append(curl->headers, "Content-Type: application/x-protobuf");
  // No "Expect: 100-continue" round trip for bodies above 1 KiB.
  curl->headers = curl_slist_append(curl->headers, "Expect:");
  for (const auto& [k, v] : options_.headers) {
    curl->headers = curl_slist_append(curl->headers, absl::StrCat(k, ": ", v).c_str());
  }
  absl::MutexLock lock(&mu_);
  curl_ = std::move(curl);
}

OtlpHttpExporter::~OtlpHttpExporter() { Shutdown(); }

void OtlpHttpExporter::Shutdown() noexcept {
  shutdown_.store(true, std::memory_order_relaxed);
  absl::MutexLock lock(&wake_mu_);
  wake_ = true;
}

OtlpHttpExporter::Attempt OtlpHttpExporter::Post(const std::string& body, absl::Time deadline) {
  Attempt a;
  CURL* h = curl_->handle;
  if (h == nullptr) {
    a.curl_code = CURLE_FAILED_INIT;
    a.curl_error = "curl_easy_init failed";
    return a;
  }
  char errbuf[CURL_ERROR_SIZE] = {0};
  const int64_t timeout_ms =
      std::max<int64_t>(1, absl::ToInt64Milliseconds(deadline - absl::Now()));
  curl_easy_setopt(h, CURLOPT_URL, options_.endpoint.c_str());
  curl_easy_setopt(h, CURLOPT_POST, 1L);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.data());
  curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, curl_->headers);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(timeout_ms));
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);  // required for timeouts in multi-threaded use
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &a.body);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &a.retry_after);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &shutdown_);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  requests_sent_.fetch_add(1, std::memory_order_relaxed);
  a.curl_code = curl_easy_perform(h);
  if (a.curl_code != CURLE_OK) {
    a.curl_error = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(a.curl_code);
  } else {
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a.http_status);
  }
  // The handle outlives this frame: drop pointers into it.
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, nullptr);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, nullptr);
  curl_easy_setopt(h, CURLOPT_POSTFIELDS, nullptr);
  return a;
}

absl::Status OtlpHttpExporter::Export(const std::vector<SpanData>& spans,
                                      absl::Time deadline) noexcept {
  if (spans.empty()) return absl::OkStatus();
  absl::Status status;
  try {
    if (shutdown_.load(std::memory_order_relaxed)) {
      return absl::CancelledError("OTLP exporter shut down");
    }
    deadline = std::min(deadline, absl::Now() + options_.timeout);
    const std::string body = ToOtlpRequest(spans).SerializeAsString();
    absl::Duration backoff = options_.initial_backoff;
    for (int attempt = 1;; ++attempt) {
      Attempt a;
      {
        absl::MutexLock lock(&mu_);
        a = Post(body, deadline);
      }
      if (shutdown_.load(std::memory_order_relaxed)) {
        return absl::CancelledError("OTLP exporter shut down during export");
      }
      if (a.curl_code != CURLE_OK) {
        status = a.curl_code == CURLE_OPERATION_TIMEDOUT
                     ? absl::DeadlineExceededError(absl::StrCat("OTLP export: ", a.curl_error))
                     : absl::UnavailableError(absl::StrCat("OTLP export: ", a.curl_error));
        break;
      }
      if (a.http_status >= 200 && a.http_status < 300) {
        opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse resp;
        if (!a.body.empty() && resp.ParseFromString(a.body) && resp.has_partial_success() &&
            (resp.partial_success().rejected_spans() > 0 ||
             !resp.partial_success().error_message().empty())) {
          // Not retried: the receiver told us it will never accept those spans.
          spdlog::warn("tracing: OTLP receiver {} rejected {} of {} span(s): {}", options_.endpoint,
                       resp.partial_success().rejected_spans(), spans.size(),
                       resp.partial_success().error_message());
        }
        return absl::OkStatus();
      }
      const std::string what =
          absl::StrCat("OTLP export to ", options_.endpoint, ": HTTP ", a.http_status);
      if (!IsRetryable(a.http_status)) {
        status = a.http_status == 400 ? absl::InvalidArgumentError(what)
                                      : absl::FailedPreconditionError(what);
        break;
      }
      if (attempt >= options_.max_attempts) {
        status = absl::UnavailableError(absl::StrCat(what, " after ", attempt, " attempt(s)"));
        break;
      }
      const absl::Duration delay = a.retry_after ? *a.retry_after : Jittered(backoff);
      backoff = std::min(backoff * 2, options_.max_backoff);
      if (absl::Now() + delay >= deadline) {
        status = absl::DeadlineExceededError(absl::StrCat(what, ": next retry in ",
                                                          absl::FormatDuration(delay),
                                                          " would pass the export deadline"));
        break;
      }
      if (delay > absl::ZeroDuration()) {
        absl::MutexLock lock(&wake_mu_);
        wake_mu_.AwaitWithTimeout(absl::Condition(&wake_), delay);
        if (wake_) return absl::CancelledError("OTLP exporter shut down during backoff");
      }
    }
  } catch (const std::exception& e) {
    status = absl::InternalError(absl::StrCat("OTLP export: ", e.what()));
  } catch (...) {
    status = absl::InternalError("OTLP export: unknown exception");
  }
  LogFailure(status);
  return status;
}

void OtlpHttpExporter::LogFailure(const absl::Status& status) {
  // A collector outage fails every batch; one line per interval is enough to notice it.
  absl::MutexLock lock(&log_mu_);
  const absl::Time now = absl::Now();
  if (now - last_log_ < kLogInterval) {
    ++suppressed_;
    return;
  }
  spdlog::warn("tracing: {} span batch dropped ({} similar failure(s) suppressed)",
               status.ToString(), suppressed_);
  last_log_ = now;
  suppressed_ = 0;
}

}  // namespace kf::trace
