// ChannelFollower: keeps a ChannelApplier up to date with its pchannel's WAL on the node that
// owns it. One thread reads the WAL from its start — catch-up from the backend, then tailing
// the write-ahead buffer — and applies every message (docs/search.md). Recovery storage will
// let it start from a checkpoint; today it replays the whole log when the pchannel opens.
//
// It stops at destruction, or by itself when the WAL ends its scanner (the pchannel closed or
// moved) or a message cannot be applied; status() then says why and the tSafe stays where it
// was, so searches waiting for a later timestamp time out instead of answering stale.
//
// Thread-safety: thread-safe. Ownership: shares the Wal (closing it is its owner's job).
#pragma once

#include <atomic>
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
  static absl::StatusOr<std::unique_ptr<ChannelFollower>> Start(std::shared_ptr<wal::Wal> wal,
                                                                ShardOptions options);
  ~ChannelFollower();
  ChannelFollower(const ChannelFollower&) = delete;
  ChannelFollower& operator=(const ChannelFollower&) = delete;

  const ChannelApplier& applier() const { return applier_; }
  wal::Wal& wal() const { return *wal_; }
  // OK while it follows; the error that stopped it otherwise.
  absl::Status status() const;

 private:
  ChannelFollower(std::shared_ptr<wal::Wal> wal, ShardOptions options,
                  std::unique_ptr<wal::Scanner> scanner);
  void Run();

  const std::shared_ptr<wal::Wal> wal_;
  ChannelApplier applier_;
  std::unique_ptr<wal::Scanner> scanner_;  // the follower thread's
  std::atomic<bool> stop_{false};
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace kf::query
