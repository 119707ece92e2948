// StreamTracker: the set of live streams of a service, so that shutdown can tell each one to
// stop (stop accepting requests, drain, finish with ON_SHUTDOWN).
//
// Thread-safety: thread-safe. Ownership: holds weak references only; a stream unregisters in
// its OnDone. Errors: none.
#pragma once

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kf::rpc {

class ShutdownAware {
 public:
  virtual ~ShutdownAware() = default;
  // Called at most once, from the shutting-down thread; must not block on the stream's
  // progress.
  virtual void OnServerShutdown() = 0;
};

class StreamTracker {
 public:
  // False once shutdown began: the caller must refuse the new stream.
  bool Register(const void* key, std::weak_ptr<ShutdownAware> stream);
  void Unregister(const void* key);
  bool shutting_down() const;

  // Marks the tracker as shutting down and notifies every live stream (outside the lock).
  void BeginShutdown();

  // Waits until every registered stream has unregistered (its OnDone ran: its final status was
  // sent) or `deadline` passes. Returns true when none is left.
  bool WaitUntilEmpty(absl::Time deadline);

 private:
  mutable absl::Mutex mu_;
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<const void*, std::weak_ptr<ShutdownAware>> streams_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::rpc
