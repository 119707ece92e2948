#include "streaming/ddl/resource_key_locks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace kf::streaming::ddl {

ResourceKeyLocks::Guard& ResourceKeyLocks::Guard::operator=(Guard&& other) noexcept {
  if (this != &other) {
    Release();
    locks_ = std::exchange(other.locks_, nullptr);
    keys_ = std::move(other.keys_);
    taken_ = std::move(other.taken_);
  }
  return *this;
}

void ResourceKeyLocks::Guard::Release() {
  if (locks_ == nullptr) return;
  std::exchange(locks_, nullptr)->Drop(taken_);
  taken_.clear();
}

absl::StatusOr<ResourceKeyLocks::Guard> ResourceKeyLocks::Acquire(std::vector<ResourceKey> keys,
                                                                  bool blocking,
                                                                  absl::Time deadline) {
  if (keys.empty()) {
    return StreamingError(StreamingCode::kInvalidArgument, "a broadcast needs a resource key");
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // Exclusive wins over the shared intention an ancestor of another key would get.
  std::map<ResourceKey, Mode> wanted;
  for (const ResourceKey& k : keys) {
    wanted[k] = Mode::kExclusive;
    for (ResourceKey& a : k.Ancestors()) wanted.try_emplace(std::move(a), Mode::kShared);
  }

  Guard guard;
  guard.keys_ = std::move(keys);
  absl::MutexLock l(&mu_);
  if (!blocking) {
    for (const auto& [k, mode] : wanted) {
      if (!CanTake(k, mode)) {
        return StreamingError(StreamingCode::kResourceAcquired,
                              absl::StrCat("resource ", k.ToString(), " is locked by another DDL"));
      }
    }
  }
  for (const auto& [k, mode] : wanted) {  // std::map: sorted acquisition
    auto free = [this, &k = k, mode = mode]()
                    ABSL_SHARED_LOCKS_REQUIRED(mu_) { return CanTake(k, mode); };
    if (!mu_.AwaitWithDeadline(absl::Condition(&free), deadline)) {
      const std::string held = k.ToString();
      for (const auto& [t, m] : guard.taken_) Untake(t, m);
      guard.taken_.clear();
      return absl::DeadlineExceededError(
          absl::StrCat("deadline passed waiting for resource ", held));
    }
    Take(k, mode);
    guard.taken_.emplace_back(k, mode);
  }
  guard.locks_ = this;
  return guard;
}

bool ResourceKeyLocks::IsHeld(const ResourceKey& key) const {
  absl::MutexLock l(&mu_);
  return held_.contains(key);
}

bool ResourceKeyLocks::CanTake(const ResourceKey& key, Mode mode) const {
  auto it = held_.find(key);
  if (it == held_.end()) return true;
  return mode == Mode::kShared ? !it->second.exclusive
                               : !it->second.exclusive && it->second.shared == 0;
}

void ResourceKeyLocks::Take(const ResourceKey& key, Mode mode) {
  Entry& e = held_[key];
  if (mode == Mode::kExclusive) {
    e.exclusive = true;
  } else {
    ++e.shared;
  }
}

void ResourceKeyLocks::Untake(const ResourceKey& key, Mode mode) {
  auto it = held_.find(key);
  if (it == held_.end()) return;
  if (mode == Mode::kExclusive) {
    it->second.exclusive = false;
  } else {
    --it->second.shared;
  }
  if (!it->second.exclusive && it->second.shared == 0) held_.erase(it);
}

void ResourceKeyLocks::Drop(const std::vector<std::pair<ResourceKey, Mode>>& taken) {
  absl::MutexLock l(&mu_);
  for (const auto& [k, mode] : taken) Untake(k, mode);
}

}  // namespace kf::streaming::ddl
