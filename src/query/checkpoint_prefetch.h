// CheckpointPrefetch: a pchannel's checkpoint loaded ahead of its follower
// (docs/recovery-storage.md, "Loaded while the WAL opens"). A node that learns it is to serve a
// pchannel starts loading the pchannel's checkpoint and sealed segments at once, on a thread of
// its own, while it opens the WAL (fencing the previous owner, replaying the log's tail); the
// follower then takes what was loaded instead of loading it after the open.
//
// What was read before the open may be stale: until the open fenced it, the previous owner
// could commit a newer checkpoint (and truncate the log below it). Take therefore reads the
// checkpoint key's mod revision again — after the open — and hands over the prefetched state
// only if the key is unchanged.
//
// Thread-safety: thread-safe; no lock of its own is held while it calls out (the `cancelled`
// callback, the metadata store). Destruction stops the load (between segments) and waits for
// it.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "query/recovery_storage.h"

namespace kf::query {

class CheckpointPrefetch {
 public:
  // Starts loading `pchannel`'s checkpoint as LoadCheckpoint(options, pchannel, shard) would.
  // `options` must outlive this (its stores are borrowed).
  CheckpointPrefetch(const RecoveryStorageOptions& options, std::string pchannel,
                     ShardOptions shard);
  ~CheckpointPrefetch();
  CheckpointPrefetch(const CheckpointPrefetch&) = delete;
  CheckpointPrefetch& operator=(const CheckpointPrefetch&) = delete;

  // Waits for the load and hands it over if the checkpoint is still the one it loaded (nullopt:
  // the pchannel had none and still has none). Any error means "load it yourself" and says why:
  // the load failed, the checkpoint changed since (ABORTED; the loaded state is freed), it was
  // taken already (FAILED_PRECONDITION), or `cancelled` (asked every few milliseconds while
  // waiting; null: never) said stop (CANCELLED; what was loaded stays for the next caller).
  absl::StatusOr<std::optional<RecoveredChannel>> Take(const std::function<bool()>& cancelled);

  // Whether a Take has settled it — handed it over, found it stale or its load failed — so
  // that it serves no one any more and may be dropped.
  bool settled() const { return settled_.load(); }
  // Whether a Take handed it over.
  bool taken() const { return taken_.load(); }
  // Stops the load at the next segment (the destructor then returns soon).
  void Cancel() { stopping_ = true; }
  // Waits until the load finished (Take waits by itself).
  void WaitLoaded() const;

 private:
  const RecoveryStorageOptions& options_;
  const std::string pchannel_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> settled_{false};
  std::atomic<bool> taken_{false};  // written under mu_
  mutable absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::StatusOr<std::optional<RecoveredChannel>> loaded_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace kf::query
