// OracleRaiseQueue: serves, one at a time on a thread of its own, the timestamp allocations that
// need the oracle's mark raised first (TimestampOracle::TryAllocateBatch said no). The
// CompletionLoop serves every call of the process and must not wait for the store; raises are
// serialised by the oracle anyway, so one thread is enough, and the allocations queued behind a
// raise are then served from memory. Nothing is refused for load: a queued call waits for its
// turn or its deadline.
//
// Thread-safety: thread-safe. Ownership: borrows the oracle (must outlive the queue); owns its
// thread (joined by Close or the destructor).
// Errors (to `done`): the oracle's; DEADLINE_EXCEEDED for a call whose deadline passed before
// its turn; UNAVAILABLE ON_SHUTDOWN after Close.
#pragma once

#include <cstdint>
#include <deque>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/hybrid_time.h"

namespace kf::streaming {
class TimestampOracle;
}  // namespace kf::streaming

namespace kf::rpc {

class OracleRaiseQueue {
 public:
  // Called once with the first of the call's timestamps, or why there are none.
  using Done = absl::AnyInvocable<void(absl::StatusOr<TimeTick>) &&>;

  explicit OracleRaiseQueue(streaming::TimestampOracle* oracle);
  ~OracleRaiseQueue();  // Close()
  OracleRaiseQueue(const OracleRaiseQueue&) = delete;
  OracleRaiseQueue& operator=(const OracleRaiseQueue&) = delete;

  // Queues an AllocateBatch(count, at_least, deadline); `done` runs on the queue's thread, or
  // at once on the caller's after Close.
  void Add(uint32_t count, TimeTick at_least, absl::Time deadline, Done done);
  // Refuses later calls, answers the queued ones and waits for the one in flight (its store
  // calls end by its deadline or the oracle's call timeout). Idempotent.
  void Close();

 private:
  struct Pending {
    uint32_t count = 0;
    TimeTick at_least;
    absl::Time deadline;
    Done done;
  };
  void Run();

  streaming::TimestampOracle* const oracle_;
  absl::Mutex mu_;
  std::deque<Pending> pending_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after the members it uses
};

}  // namespace kf::rpc
