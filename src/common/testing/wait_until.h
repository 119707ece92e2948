// WaitUntil: polls a condition on state that announces no change of its own (a store, another
// process's log, a counter other threads advance), bounded by a timeout. Tests only: production
// code waits on a notification.
//
// Header-only, no library. Thread-safety: as `cond`. Errors: none; false on timeout.
#pragma once

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace kf::testing {

// True as soon as `cond()` holds; false once `timeout` passed without it. `cond` runs every
// `poll` (and once more at the deadline's side: it is checked before giving up).
template <typename Cond>
bool WaitUntil(Cond cond, absl::Duration timeout, absl::Duration poll = absl::Milliseconds(5)) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!cond()) {
    if (absl::Now() >= deadline) return false;
    absl::SleepFor(poll);  // pacing of a bounded poll
  }
  return true;
}

}  // namespace kf::testing
