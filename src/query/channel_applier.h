// ChannelApplier: the query side of one pchannel on the node that owns it (docs/search.md).
// It is given the pchannel's messages as a reader receives them — timetick order, a committed
// transaction as one Txn at its commit, rolled-back and expired ones never — and applies them
// to the shards of the collections on the pchannel:
//   CreateCollection -> a shard for the message's vchannel (dim, metric from the schema);
//   Create/DropPartition -> the shard's partitions;  DropCollection -> the shard is released;
//   Insert, Delete -> the shard's segments at the message's timetick;
//   CreateSegment -> the partition's growing segment sealed, the next one opened;
//   Txn -> its bodies, in order, at the commit's timetick.
// After an Insert that fills a growing segment to ShardOptions::seal_rows, it calls the
// `request_seal` hook once for that segment (the follower appends the CreateSegment).
// Every applied message and every TimeTick advances the pchannel's tSafe: every message with
// a timetick <= tSafe has been applied, so a search at T <= tSafe sees exactly the rows of T.
// Messages on raw vchannels pass without effect (they have no schema).
//
// Recovery (docs/recovery-storage.md): an applier restored from a checkpoint (Restore) is fed
// the log from the checkpoint's replay_from, which lies at or before its timetick; what the
// checkpoint already reflects is skipped: DDL and CreateSegments at or below its timetick, and
// the rows and deletes its flushed segments hold (Shard::Insert, Shard::Delete `replaying`).
// PlanCheckpoint says what a checkpoint of everything applied so far must write, including the
// WAL's own state (the collection table and broadcast results the WAL rebuilds from every DDL
// when it opens), which the applier keeps a copy of from the DDL it applies: with it, opening
// the WAL reads only the DDL after the checkpoint (wal/recovery.h).
//
// Thread-safety: Apply from one thread (the follower); everything else from any thread.
// Errors: Apply returns DATA_LOSS for a collection message whose payload does not decode (the
// WAL checked it when it was appended, so the log is corrupt) and applies nothing of it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "message/message.h"
#include "query/shard.h"
#include "wal/collections/collection_table.h"
#include "wal/replicate_state.h"

namespace kf::query {

// A checkpoint of everything applied up to `checkpoint_ts` (ChannelApplier::PlanCheckpoint).
struct CheckpointPlan {
  uint64_t checkpoint_ts = 0;
  // Where a replay must start: the oldest LCMID of a growing segment holding rows, or the
  // LCMID of the last message applied.
  MessageId replay_from;
  std::vector<std::pair<std::shared_ptr<Shard>, ShardCheckpointPlan>> shards;
  std::optional<kingfisher::v1::WalState> wal;  // nullopt before the first message
  // Once committed, the WAL below this may go (invalid: keep it all): the follower's choice.
  MessageId truncate_before;
  uint64_t applied_messages = 0;  // the follower's count when it planned this
};

class ChannelApplier {
 public:
  // Asks for a CreateSegment of (shard, partition) to be appended; on failure the hook gives
  // the claim back (Shard::ReleaseSealClaim) so a later Insert asks again.
  using RequestSeal = std::function<void(const std::shared_ptr<Shard>&, const std::string&)>;

  ChannelApplier(std::string pchannel, ShardOptions options, RequestSeal request_seal = nullptr);

  const std::string& pchannel() const { return pchannel_; }

  absl::Status Apply(const ImmutableMessage& message);
  // Before the first Apply: the shards of a checkpoint at `checkpoint_ts`, whose log is then
  // applied from its replay_from on.
  void Restore(std::vector<std::shared_ptr<Shard>> shards, uint64_t checkpoint_ts,
               const kingfisher::v1::WalState& wal);
  // Apply's thread. Invalid replay_from before the first message.
  CheckpointPlan PlanCheckpoint() const;
  // CreateSegments and ManualFlushes applied so far (Apply's thread): a new one means segments
  // to flush.
  uint64_t segments_opened() const { return segments_opened_; }
  // Apply's thread: the growing segments due to be sealed for their age at `now_ms`, claimed
  // (Shard::ClaimAgedSeals); the caller asks for their CreateSegments.
  std::vector<std::pair<std::shared_ptr<Shard>, std::string>> ClaimAgedSeals(uint64_t now_ms);
  // Apply's thread: the largest growing segment of at least `min_rows` rows of any shard,
  // claimed (Shard::LargestGrowing, Shard::ClaimSealOf); nullopt if none.
  std::optional<std::pair<std::shared_ptr<Shard>, std::string>> ClaimLargestSeal(size_t min_rows);

  // Every message with a timetick <= tsafe() is applied (0 before the first).
  uint64_t tsafe() const;
  // True once tsafe() >= ts; false if `deadline` passed first.
  bool AwaitTSafe(uint64_t ts, absl::Time deadline) const;

  // The shard of a created, not dropped collection vchannel; nullptr otherwise.
  std::shared_ptr<const Shard> shard(std::string_view vchannel) const;
  // Every shard of a created, not dropped collection.
  std::vector<std::shared_ptr<const Shard>> shards() const;
  // Bytes of the shards' rows and indexes.
  size_t memory_bytes() const;
  size_t rows() const;  // every shard's, deleted ones included

 private:
  // One message (a Txn's body too) at `at`: the timestamp and LCMID of the message applied.
  absl::Status ApplyOne(const ImmutableMessage& message, const SegmentStart& at);
  // Whether a message at `ts` is one the restored checkpoint already reflects.
  bool Replaying(uint64_t ts) const { return replayed_below_ > 0 && ts <= replayed_below_; }
  // Keeps the copy of the WAL's state up to date with a DDL or a replicated message.
  void ReplayWalState(const ImmutableMessage& message);
  std::shared_ptr<Shard> MutableShard(std::string_view vchannel) const;
  std::vector<std::shared_ptr<Shard>> MutableShards() const;  // a snapshot
  void AdvanceTSafe(uint64_t ts);

  const std::string pchannel_;
  const ShardOptions options_;
  const RequestSeal request_seal_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Shard>> shards_ ABSL_GUARDED_BY(mu_);
  uint64_t tsafe_ ABSL_GUARDED_BY(mu_) = 0;
  // Apply's thread only.
  uint64_t replayed_below_ = 0;  // the restored checkpoint's timetick (0: none)
  MessageId applied_from_;       // the LCMID of the last message applied
  MessageId applied_id_;         // the id of the last message applied
  wal::CollectionTable wal_collections_;
  wal::ReplicateState wal_replicate_;
  // Per vchannel its latest kBroadcastWindow broadcast results, oldest first.
  absl::flat_hash_map<std::string, std::deque<kingfisher::v1::WalBroadcast>> wal_broadcasts_;
  uint64_t segments_opened_ = 0;
};

}  // namespace kf::query
