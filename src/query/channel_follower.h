// ChannelFollower: keeps a ChannelApplier up to date with its pchannel's WAL on the node that
// owns it. One thread reads the WAL from its start — catch-up from the backend, then tailing
// the write-ahead buffer — and applies every message (docs/search.md). When a growing segment
// is full it appends the CreateSegment that seals it (once tailing: during catch-up the log may
// already hold the one an earlier owner appended).
//
// With recovery storage (recovery_storage.h) it starts from the pchannel's checkpoint — its
// flushed segments loaded, the log read from the checkpoint's replay_from — and writes a new
// checkpoint when a segment was sealed and every checkpoint_interval while anything changed, on
// the checkpoint writer's thread (the applying goes on meanwhile). Without, it replays the whole
// log.
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

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "query/channel_applier.h"
#include "query/checkpoint_prefetch.h"
#include "query/recovery_storage.h"
#include "wal/wal.h"

namespace kf::query {

class ChannelFollower {
 public:
  // `recovery` null: no checkpoints (the whole log is replayed). `cancelled` (null: never)
  // stops a checkpoint's load early, CANCELLED, once the follower is no longer wanted (its WAL
  // was reopened at a newer term meanwhile). `prefetch` (null: none): the checkpoint as loaded
  // while the WAL opened, taken if still current (loaded again otherwise).
  static absl::StatusOr<std::unique_ptr<ChannelFollower>> Start(
      std::shared_ptr<wal::Wal> wal, ShardOptions options,
      absl::Duration drain_interval = absl::Milliseconds(50),
      const RecoveryStorageOptions* recovery = nullptr,
      const std::function<bool()>& cancelled = nullptr, CheckpointPrefetch* prefetch = nullptr);
  ~ChannelFollower();
  ChannelFollower(const ChannelFollower&) = delete;
  ChannelFollower& operator=(const ChannelFollower&) = delete;

  const ChannelApplier& applier() const { return applier_; }
  wal::Wal& wal() const { return *wal_; }
  // OK while it follows; the error that stopped it otherwise.
  absl::Status status() const;
  // Follows closely until `ts` is applied (applier().AwaitTSafe(ts) to wait for it).
  void Want(uint64_t ts) const;

  // Recovery storage, for /metrics and tests.
  struct CheckpointStats {
    uint64_t loaded_ts = 0;        // the checkpoint it started from (0: none)
    size_t loaded_segments = 0;    // flushed segments it loaded
    MessageId loaded_replay_from;  // where it started reading the WAL
    uint64_t committed_ts = 0;     // its last committed checkpoint (0: none yet)
    MessageId committed_replay_from;
    absl::Time committed_at = absl::InfinitePast();
    uint64_t commits = 0;
    // Messages applied since it opened here, and when its last commit was planned: their
    // difference is what a restart would replay beyond the checkpoint.
    uint64_t applied_messages = 0;
    uint64_t committed_messages = 0;
    uint64_t lag_messages() const {
      return applied_messages - std::min(applied_messages, committed_messages);
    }
    absl::Status last_error;     // of the last write that failed
    uint64_t failures = 0;       // writes that failed
    MessageId truncated_before;  // the last truncation of the WAL
    uint64_t truncations = 0;
  };
  CheckpointStats checkpoint_stats() const;

 private:
  ChannelFollower(std::shared_ptr<wal::Wal> wal, ShardOptions options,
                  absl::Duration drain_interval, std::unique_ptr<wal::Scanner> scanner,
                  std::optional<RecoveredChannel> recovered,
                  const RecoveryStorageOptions* recovery);
  void Run();
  // The applier's hook (follower thread): appends a CreateSegment of (shard, partition).
  void RequestSeal(const std::shared_ptr<Shard>& shard, const std::string& partition);
  // Applies what the scanner has; while `chase`, waits for more until wanted_ is applied.
  absl::Status Drain(bool chase);
  bool Chasing() const ABSL_LOCKS_EXCLUDED(mu_);
  // The follower thread: hands a checkpoint to the writer when one is due and it is idle.
  void MaybeCheckpoint();
  // The follower thread, once a second while tailing: asks for the CreateSegments of growing
  // segments sealed for their age (ShardOptions::seal_lifetime, seal_idle), and of the largest
  // one under memory pressure (ShardOptions::memory_pressure).
  void MaybeSealAged();
  // The follower thread: remembers the age and size of the log at `id` (one sample a second,
  // or per 1/64 of the size bound).
  void SampleAge(const MessageId& id, uint64_t ts, size_t bytes);
  // Where the WAL may be truncated once `replay_from` is committed: below it, unless messages
  // there are younger than the retention.
  MessageId TruncationPoint(const MessageId& replay_from);
  void CheckpointDone(const CheckpointPlan& plan, const absl::Status& status);

  const std::shared_ptr<wal::Wal> wal_;
  const std::function<MemoryPressure()> memory_pressure_;
  const size_t chunk_rows_;
  ChannelApplier applier_;
  const absl::Duration drain_interval_;
  std::unique_ptr<wal::Scanner> scanner_;  // the follower thread's
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  mutable uint64_t wanted_ ABSL_GUARDED_BY(mu_) = 0;  // a request, not the follower's state
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  CheckpointStats checkpoint_stats_ ABSL_GUARDED_BY(mu_);
  // The follower thread's: when the next periodic checkpoint is due; the sealed segments the
  // last plan saw.
  absl::Time next_checkpoint_ = absl::InfinitePast();
  absl::Time next_age_check_ = absl::InfinitePast();
  bool sealing_for_memory_ = false;  // between MemoryPressure kHigh and kLow
  uint64_t planned_seals_ = 0;
  uint64_t planned_ts_ = 0;
  // Applied messages, oldest first, a second (or 1/64 of the size bound) apart: the physical
  // ms of the timetick, and the bytes applied before it (what a size bound keeps is measured
  // on them).
  struct Sample {
    MessageId id;
    uint64_t ms = 0;
    uint64_t bytes_before = 0;
  };
  std::deque<Sample> ages_;
  uint64_t applied_bytes_ = 0;  // of every message applied (encoded sizes)
  std::atomic<uint64_t> applied_messages_{0};
  std::atomic<bool> retry_checkpoint_{false};  // the last write failed (the writer's thread)
  const absl::Duration checkpoint_interval_;
  const absl::Duration wal_retention_;
  const uint64_t wal_retention_bytes_;
  std::unique_ptr<CheckpointWriter> writer_;  // null without recovery storage
  std::thread thread_;
};

}  // namespace kf::query
