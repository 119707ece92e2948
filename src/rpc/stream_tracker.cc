#include "rpc/stream_tracker.h"

namespace kf::rpc {

bool StreamTracker::Register(const void* key, std::weak_ptr<ShutdownAware> stream) {
  absl::MutexLock lock(&mu_);
  if (shutting_down_) return false;
  streams_[key] = std::move(stream);
  return true;
}

void StreamTracker::Unregister(const void* key) {
  absl::MutexLock lock(&mu_);
  streams_.erase(key);
}

bool StreamTracker::shutting_down() const {
  absl::MutexLock lock(&mu_);
  return shutting_down_;
}

void StreamTracker::BeginShutdown() {
  std::vector<std::shared_ptr<ShutdownAware>> live;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_) return;
    shutting_down_ = true;
    for (auto& [key, weak] : streams_) {
      if (auto s = weak.lock()) live.push_back(std::move(s));
    }
  }
  // Outside the lock: a stream may finish (and unregister) from inside OnServerShutdown.
  for (auto& s : live) s->OnServerShutdown();
}

bool StreamTracker::WaitUntilEmpty(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto empty = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return streams_.empty(); };
  return mu_.AwaitWithDeadline(absl::Condition(&empty), deadline);
}

}  // namespace kf::rpc
