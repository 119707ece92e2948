// Recovery storage (docs/recovery-storage.md): a pchannel's sealed segments in the object store
// and its checkpoint in the metadata store, so that opening the pchannel loads them and replays
// only the tail of its WAL.
//
// A checkpoint is written in this order: each sealed segment not flushed yet becomes an object
// (docs/sealed-segment-format.md), the deletes that hit flushed segments since the last
// checkpoint become delete logs, then the checkpoint (proto/kingfisher/v1/checkpoint.proto)
// naming them is committed by compare-and-swap on the key's mod revision. A crash before the
// commit leaves objects no checkpoint names (the garbage collection after a later commit removes
// them); nothing a checkpoint names
// is ever overwritten, because every writer names its objects with its own tag (term and a
// random number). The compare-and-swap fences an owner that lost the pchannel: once a newer
// owner (a higher term) committed, this one's commits fail and it stops writing (FENCED); a
// commit of an older owner that had not noticed the move yet is overwritten.
//
// Keys: meta `<meta_prefix><pchannel>`; objects
// `<object_prefix>segments/<pchannel>/<vchannel>/<partition>/<segment_id>.<tag>.seg` and
// `....<tag>.del.<first_ts>` for delete logs. After a commit that may have left orphans (its
// first, one after a failed write, one over another writer's, one that stopped naming objects;
// and at least every kCollectionBackstop) the writer deletes the pchannel's objects the
// checkpoint does not name whose tag's term is not above its own (orphans of flushes that never
// committed, segments of dropped collections).
//
// Thread-safety: LoadCheckpoint is a function; a CheckpointWriter is thread-safe.
// Errors: LoadCheckpoint returns DATA_LOSS naming the object or key that is corrupt or
// truncated, and the store's error (UNAVAILABLE, DEADLINE_EXCEEDED, NOT_FOUND for a missing
// object) with the key it was reading; nothing is loaded silently.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/strong_id.h"
#include "message/message_id.h"
#include "query/channel_applier.h"
#include "query/shard.h"
#include "storage/meta/meta_store.h"
#include "storage/object/object_store.h"

namespace kf::query {

struct RecoveryStorageOptions {
  object::ObjectStore* objects = nullptr;  // borrowed
  meta::MetaStore* meta = nullptr;         // borrowed
  std::string meta_prefix;                 // the checkpoint of P is at meta_prefix + P
  std::string object_prefix;               // "" or ending in '/'
  // A checkpoint is written this often while anything changed, and at once when a segment was
  // sealed.
  absl::Duration checkpoint_interval = absl::Seconds(10);
  absl::Duration io_timeout = absl::Seconds(30);  // per object or metadata call
  // After a checkpoint the WAL is truncated below its replay_from, but never below messages
  // younger than this (consumers of raw vchannels read them), unless the log after them holds
  // more than wal_retention_bytes (0: no size bound). InfiniteDuration and no size bound: never
  // truncated; ZeroDuration: everything checkpoints do not need goes.
  absl::Duration wal_retention = absl::InfiniteDuration();
  uint64_t wal_retention_bytes = 0;
  // Where a segment object that the store does not map (S3: read into the heap) is copied to be
  // mapped instead (fs::FileSystem::MapCopy; unnamed files, nothing stays there), so that loaded
  // and flushed segments are page cache, not the process's own memory, whatever the store.
  // Empty: they stay in the heap.
  std::string spill_dir;
};

// A pchannel's state as its checkpoint left it.
struct RecoveredChannel {
  uint64_t checkpoint_ts = 0;
  MessageId replay_from;                       // invalid: from the start of the log
  std::vector<std::shared_ptr<Shard>> shards;  // restored, their flushed segments loaded
  int64_t mod_revision = 0;                    // of the checkpoint key
  size_t segments = 0;                         // flushed segments loaded
  kingfisher::v1::WalState wal;                // the WAL's state at the checkpoint
};

// The checkpoint of `pchannel` and its segments, loaded; nullopt if it has none. CANCELLED
// once `cancelled` (asked between segments; null: never) says the load is no longer wanted.
absl::StatusOr<std::optional<RecoveredChannel>> LoadCheckpoint(
    const RecoveryStorageOptions& options, std::string_view pchannel,
    const ShardOptions& shard_options, const std::function<bool()>& cancelled = nullptr);

// The WAL's state in `pchannel`'s checkpoint (WalOptions::load_checkpoint); nullopt if it has
// none. DATA_LOSS for a checkpoint that does not parse.
absl::StatusOr<std::optional<kingfisher::v1::WalState>> LoadWalState(
    const RecoveryStorageOptions& options, std::string_view pchannel);

// The mod revision of `pchannel`'s checkpoint key (RecoveredChannel::mod_revision); 0 if it has
// none.
absl::StatusOr<int64_t> CheckpointRevision(const RecoveryStorageOptions& options,
                                           std::string_view pchannel);

// Every object (segment and delete log) `checkpoint` names.
absl::flat_hash_set<std::string> ObjectsNamedBy(
    const kingfisher::v1::PChannelCheckpoint& checkpoint);

class CheckpointWriter {
 public:
  // How long a checkpoint's write waits in all for its segments' full chunks to be indexed (at
  // most the checkpoint interval).
  static constexpr absl::Duration kIndexWait = absl::Seconds(2);
  // Garbage collection runs after commits that may leave orphans, and at least this often.
  static constexpr absl::Duration kCollectionBackstop = absl::Minutes(10);

  // Runs on the writer's thread after a write: OK once committed, the error otherwise.
  using Done = absl::AnyInvocable<void(const CheckpointPlan&, absl::Status) &&>;

  // `mod_revision`: the checkpoint key's as loaded (0: it had none).
  CheckpointWriter(RecoveryStorageOptions options, std::string pchannel, Term term,
                   int64_t mod_revision);
  ~CheckpointWriter();  // waits for a write in progress
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Starts writing `plan` unless a write is in progress (false then: nothing taken).
  bool Submit(CheckpointPlan plan, Done done);
  // Whether a write is in progress: until its Done returned (after it committed, or not).
  bool busy() const;
  // True once a commit found the key changed by another owner: later writes fail at once.
  bool fenced() const;
  // Objects its garbage collection deleted.
  uint64_t deleted_objects() const { return deleted_objects_.load(std::memory_order_relaxed); }

 private:
  void Run();
  // Writes the objects of `plan` (filling in their keys), then commits it.
  absl::Status Write(CheckpointPlan& plan);
  // Compare-and-swaps the checkpoint key to `value`.
  absl::Status Commit(const std::string& value);
  std::string ObjectKey(const kingfisher::v1::ShardCheckpoint& shard,
                        const kingfisher::v1::PartitionCheckpoint& partition,
                        uint64_t segment_id) const;
  std::string ObjectPrefix() const;  // every object of the pchannel
  // After a commit: deletes this pchannel's objects `named` (what it committed) leaves out
  // (see .cc). False when a LIST or DELETE failed.
  bool CollectGarbage(const absl::flat_hash_set<std::string>& named);
  // The sealed `segment` as its object `key` (just written, `bytes`) holds it, over the
  // object's bytes: the store's mapping when it maps, else `bytes` itself. Null when that
  // fails (logged): the segment then stays as it is. REQUIRES: the object holds every index.
  std::shared_ptr<search::GrowingSegment> ReadBack(const std::string& key, std::string bytes,
                                                   const search::GrowingSegment& segment) const;

  const RecoveryStorageOptions options_;
  const std::string pchannel_;
  const Term term_;
  const std::string tag_;  // names this writer's objects
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool fenced_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<std::pair<CheckpointPlan, Done>> job_ ABSL_GUARDED_BY(mu_);
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  // The writer thread's:
  int64_t mod_revision_;
  bool garbage_possible_ = true;            // orphans may exist: collect after the next commit
  absl::flat_hash_set<std::string> named_;  // objects its last commit named
  absl::Time last_collection_ = absl::InfinitePast();  // the last complete one
  std::atomic<uint64_t> deleted_objects_{0};
  std::thread thread_;
};

}  // namespace kf::query
