// TimerQueue: runs callbacks at given times on one background thread (append retries after
// backoff, attempt timeouts).
//
// Thread-safety: Schedule and Stop are thread-safe; callbacks run one at a time on the timer
// thread and may call Schedule. Ownership: owns its thread; Stop (or the destructor) joins it
// and DROPS callbacks that have not run yet, so owners must not rely on a scheduled callback
// to release resources. Errors: none.
#pragma once

#include <cstdint>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kf::client {

class TimerQueue {
 public:
  TimerQueue();
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  using TaskId = std::pair<absl::Time, uint64_t>;

  // Runs `fn` at or after `when`. After Stop, `fn` is dropped.
  TaskId Schedule(absl::Time when, absl::AnyInvocable<void() &&> fn);
  // Drops the task if it has not started yet (no-op otherwise).
  void Cancel(const TaskId& id);
  // Joins the timer thread (must not be called from a callback). Idempotent.
  void Stop();

 private:
  void Run();

  absl::Mutex mu_;
  // Keyed by (time, sequence) so equal times keep their order.
  std::map<TaskId, absl::AnyInvocable<void() &&>> tasks_ ABSL_GUARDED_BY(mu_);
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time wake_at_ ABSL_GUARDED_BY(mu_);  // when the timer thread wakes next on its own
  std::thread thread_;
};

}  // namespace kf::client
