// CallWorkers: runs blocking RPC work (store round trips, DDL broadcasts) off the CompletionLoop,
// which serves every call of the process: one thread per call, at most `max` works at once, so a
// burst is refused instead of queued without bound and a slow call never holds up another. (Threads
// past their work, sending the reply, may briefly exceed `max`.)
//
// Thread-safety: thread-safe. Ownership: owns its threads; the destructor closes and joins
// them (so whatever the work borrows must outlive the CallWorkers or be waited for first).
// Errors: TrySpawn says why it did not run the work (full, closed).
#pragma once

#include <cstdint>
#include <map>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kf::rpc {

class CallWorkers {
 public:
  explicit CallWorkers(int max) : max_(max) {}
  // Close(), then waits for every thread.
  ~CallWorkers();
  CallWorkers(const CallWorkers&) = delete;
  CallWorkers& operator=(const CallWorkers&) = delete;

  enum class Spawn { kStarted, kFull, kClosed };
  // What a work returns: the reply, run once the work's slot is free again, so a client that
  // got its answer and calls again at once is not refused for its own finished call.
  using Reply = absl::AnyInvocable<void() &&>;
  // Runs `work`, then its reply, on a new thread, unless `max` works are running or Close was
  // called. The work and the reply (and whatever they captured) are destroyed on that thread
  // before WaitIdle counts it finished.
  Spawn TrySpawn(absl::AnyInvocable<Reply() &&> work);
  // What a call that TrySpawn refused (kFull, kClosed) is answered: UNAVAILABLE ON_SHUTDOWN, or
  // RESOURCE_EXHAUSTED "too many `what` in progress (max); retry later".
  absl::Status Refusal(Spawn spawned, std::string_view what) const;
  // Refuses new work from now on. Idempotent.
  void Close();
  // Waits until every thread finished (work and reply); false at the deadline.
  bool WaitIdle(absl::Time deadline);

 private:
  // Joins the threads whose work is over. REQUIRES: mu_ held.
  void Reap() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int max_;
  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  int working_ ABSL_GUARDED_BY(mu_) = 0;  // works not returned yet (the limit)
  std::map<uint64_t, std::thread> threads_ ABSL_GUARDED_BY(mu_);
  std::vector<uint64_t> finished_ ABSL_GUARDED_BY(mu_);  // work over, thread not joined yet
};

}  // namespace kf::rpc
