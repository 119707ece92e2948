// WatchRecorder: collects what a MetaStore watch delivers so a test can wait for it (with a
// deadline, never a sleep) and compare it.
//
// Thread-safety: the callback runs on the store's thread, the waits on the test thread.
#pragma once

#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "storage/meta/meta_store.h"

namespace kf::meta::testing {

class WatchRecorder {
 public:
  WatchCallback Callback() {
    return [this](const WatchResponse& r) {
      absl::MutexLock l(&mu_);
      ++calls_;
      if (!r.status.ok()) error_ = r.status;
      events_.insert(events_.end(), r.events.begin(), r.events.end());
    };
  }

  // Waits until at least `n` events arrived; false at the deadline.
  bool WaitForEvents(size_t n, absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock l(&mu_);
    auto enough = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return events_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }

  // Waits until the watch reported an error; false at the deadline.
  bool WaitForError(absl::Duration timeout = absl::Seconds(10)) {
    absl::MutexLock l(&mu_);
    auto failed = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !error_.ok(); };
    return mu_.AwaitWithTimeout(absl::Condition(&failed), timeout);
  }

  std::vector<WatchEvent> events() const {
    absl::MutexLock l(&mu_);
    return events_;
  }
  absl::Status error() const {
    absl::MutexLock l(&mu_);
    return error_;
  }
  int calls() const {
    absl::MutexLock l(&mu_);
    return calls_;
  }

 private:
  mutable absl::Mutex mu_;
  std::vector<WatchEvent> events_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  int calls_ ABSL_GUARDED_BY(mu_) = 0;
};

// "PUT key=value@rev" / "DELETE key@rev": events as comparable strings for test assertions.
inline std::string Describe(const WatchEvent& e) {
  return (e.type == WatchEvent::Type::kPut ? "PUT " + e.kv.key + "=" + e.kv.value
                                           : "DELETE " + e.kv.key) +
         "@" + std::to_string(e.kv.mod_revision);
}

inline std::vector<std::string> Describe(const std::vector<WatchEvent>& events) {
  std::vector<std::string> out;
  for (const WatchEvent& e : events) out.push_back(Describe(e));
  return out;
}

}  // namespace kf::meta::testing
