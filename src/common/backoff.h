// Backoff between retries of a failing background operation, and an interruptible sleep.
// Header-only. Backoff is a value type (thread-compatible); SleepUnlessStopped is thread-safe.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <stop_token>

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

// Sleeps for `d` unless `stop` is requested first; false when stopped.
inline bool SleepUnlessStopped(absl::Duration d, std::stop_token stop) {
  std::mutex m;
  std::condition_variable_any cv;
  std::unique_lock lock(m);
  cv.wait_for(lock, stop, absl::ToChronoNanoseconds(d), [] { return false; });
  return !stop.stop_requested();
}

}  // namespace kf
