// ChannelFollower: keeps a ChannelApplier up to date with its pchannel's WAL on the node that
// owns it. One thread reads the WAL from its start — catch-up from the backend, then tailing
// the write-ahead buffer — and applies every message (docs/search.md). When a growing segment
// is full it appends the CreateSegment that seals it (once tailing: during catch-up the log may
// already hold the one an earlier owner appended). Recovery storage will
// let it start from a checkpoint; today it replays the whole log when the pchannel opens.
//
// Lazily: the thread does not wake for every append. It drains what is ready every
// `drain_interval` (so the shards stay close and the buffer does not fill), and follows the
// log message by message only while a caller wants a timestamp not applied yet (Want). A
// pchannel nobody searches costs one wake-up per interval, not one per append.
//
// It stops at destruction, or by itself when the WAL ends its scanner (the pchannel closed or
// moved) or a message cannot be applied; status() then says why and the tSafe stays where it
// was, so searches waiting for a later timestamp time out instead of answering stale.
//
// Thread-safety: thread-safe. Ownership: shares the Wal (closing it is its owner's job).
#pragma once

#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "query/channel_applier.h"
#include "wal/wal.h"

namespace kf::query {

class ChannelFollower {
 public:
  static absl::StatusOr<std::unique_ptr<ChannelFollower>> Start(
      std::shared_ptr<wal::Wal> wal, ShardOptions options,
      absl::Duration drain_interval = absl::Milliseconds(50));
  ~ChannelFollower();
  ChannelFollower(const ChannelFollower&) = delete;
  ChannelFollower& operator=(const ChannelFollower&) = delete;

  const ChannelApplier& applier() const { return applier_; }
  wal::Wal& wal() const { return *wal_; }
  // OK while it follows; the error that stopped it otherwise.
  absl::Status status() const;
  // Follows closely until `ts` is applied (applier().AwaitTSafe(ts) to wait for it).
  void Want(uint64_t ts) const;

 private:
  ChannelFollower(std::shared_ptr<wal::Wal> wal, ShardOptions options,
                  absl::Duration drain_interval, std::unique_ptr<wal::Scanner> scanner);
  void Run();
  // The applier's hook (follower thread): appends a CreateSegment of (shard, partition).
  void RequestSeal(const std::shared_ptr<Shard>& shard, const std::string& partition);
  // Applies what the scanner has; while `chase`, waits for more until wanted_ is applied.
  absl::Status Drain(bool chase);
  bool Chasing() const ABSL_LOCKS_EXCLUDED(mu_);

  const std::shared_ptr<wal::Wal> wal_;
  ChannelApplier applier_;
  const absl::Duration drain_interval_;
  std::unique_ptr<wal::Scanner> scanner_;  // the follower thread's
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  mutable uint64_t wanted_ ABSL_GUARDED_BY(mu_) = 0;  // a request, not the follower's state
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace kf::query
