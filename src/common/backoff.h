// Backoff between retries of a failing background operation, a retry loop over it, and an
// interruptible sleep. Header-only. Backoff is a value type (thread-compatible); the functions
// are thread-safe.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <stop_token>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kf {

// Exponential: initial, 2x, 4x, ... capped at max. No jitter: its users are single
// background loops, not a herd of clients.
class Backoff {
 public:
  Backoff(absl::Duration initial, absl::Duration max) : initial_(initial), max_(max) {}
  absl::Duration Next() {
    const absl::Duration d = next_;
    next_ = std::min(next_ * 2, max_);
    return d;
  }
  void Reset() { next_ = initial_; }

 private:
  absl::Duration initial_;
  absl::Duration max_;
  absl::Duration next_ = initial_;
};

namespace backoff_internal {
inline const absl::Status& StatusOf(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& StatusOf(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace backoff_internal

// Calls `attempt` (returning absl::Status or absl::StatusOr) again while `retry` says its status
// is worth retrying (never for OK), waiting 10 ms, 20 ms, ... up to 1 s in between, and gives up
// when the next wait would pass `deadline`. Returns the last attempt's result.
template <typename Retry, typename Attempt>
auto RetryWithBackoff(absl::Time deadline, Retry retry, Attempt attempt) -> decltype(attempt()) {
  Backoff backoff(absl::Milliseconds(10), absl::Seconds(1));
  for (;;) {
    auto result = attempt();
    const absl::Status& status = backoff_internal::StatusOf(result);
    if (status.ok() || !retry(status)) return result;
    const absl::Duration wait = backoff.Next();
    if (absl::Now() + wait >= deadline) return result;
    absl::SleepFor(wait);
  }
}

// Sleeps for `d` unless `stop` is requested first; false when stopped.
inline bool SleepUnlessStopped(absl::Duration d, std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, absl::ToChronoNanoseconds(d), [] { return false; });
  return !stop.stop_requested();
}

}  // namespace kf
