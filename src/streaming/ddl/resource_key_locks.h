// ResourceKeyLocks: the broadcaster's in-memory DDL locks (docs/semantics.md §5).
//
// A request names the keys its DDL changes; each is locked exclusively and each of their
// ancestors (ResourceKey::Ancestors) in shared "intention" mode. So DDL on the same collection
// is serialised, DDL on different collections runs in parallel, a database-wide DDL waits for
// every collection DDL in that database (and blocks new ones), and a cluster-wide DDL
// conflicts with everything. Shared locks are compatible with shared locks only.
//
// Acquisition is sorted (ResourceKey order: cluster, databases, collections): a blocking
// request takes its keys one by one in that order, waiting for each, so two requests can
// never wait for each other in a cycle. A non-blocking request takes all keys at once or none
// and fails with RESOURCE_ACQUIRED (ABORTED) naming the held key. No fairness is promised
// among waiters of one key.
//
// Thread-safety: thread-safe. Ownership: a Guard releases its keys when destroyed or
// Release()d; it must not outlive the ResourceKeyLocks. Errors: RESOURCE_ACQUIRED (non-
// blocking, a key held), DEADLINE_EXCEEDED (blocking, the deadline passed; nothing held),
// INVALID_ARGUMENT (no keys).
#pragma once

#include <map>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "streaming/ddl/resource_key.h"

namespace kf::streaming::ddl {

class ResourceKeyLocks {
 public:
  enum class Mode { kShared, kExclusive };

  // The locks of one request; move-only.
  class Guard {
   public:
    Guard() = default;
    Guard(Guard&& other) noexcept { *this = std::move(other); }
    Guard& operator=(Guard&& other) noexcept;
    ~Guard() { Release(); }

    // The keys requested exclusively (what `_bh` records), sorted.
    const std::vector<ResourceKey>& keys() const { return keys_; }
    bool held() const { return locks_ != nullptr; }
    void Release();

   private:
    friend class ResourceKeyLocks;
    ResourceKeyLocks* locks_ = nullptr;
    std::vector<ResourceKey> keys_;
    std::vector<std::pair<ResourceKey, Mode>> taken_;
  };

  ResourceKeyLocks() = default;
  ResourceKeyLocks(const ResourceKeyLocks&) = delete;
  ResourceKeyLocks& operator=(const ResourceKeyLocks&) = delete;

  absl::StatusOr<Guard> Acquire(std::vector<ResourceKey> keys, bool blocking, absl::Time deadline);

  // Whether `key` is held in any mode (for tests and diagnostics).
  bool IsHeld(const ResourceKey& key) const;

 private:
  struct Entry {
    int shared = 0;
    bool exclusive = false;
  };

  bool CanTake(const ResourceKey& key, Mode mode) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  void Take(const ResourceKey& key, Mode mode) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Untake(const ResourceKey& key, Mode mode) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Drop(const std::vector<std::pair<ResourceKey, Mode>>& taken);

  mutable absl::Mutex mu_;
  std::map<ResourceKey, Entry> held_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::streaming::ddl
