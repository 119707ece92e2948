// Shard: the data of one collection vchannel on the node that owns its pchannel
// (docs/search.md): per partition, its sealed segments and one growing segment, written by the
// pchannel's applier (channel_applier.h) in timetick order and searched by any number of
// threads.
//
// Segments (docs/recovery-storage.md): a partition's rows go to its growing segment until a
// CreateSegment message of the partition is applied; that seals it (it keeps answering searches
// and taking deletes) and opens the next one. A segment's id is the timetick of the message that
// opened it (the CreateSegment or ManualFlush, or for a partition's first one the message that
// created the partition), unique per partition. The boundaries are WAL messages, so every replay of
// the log draws them in the same place. Once a growing segment is full (seal_rows, seal_bytes),
// ClaimSeal says so once, and once it is old or idle (seal_lifetime, seal_idle, measured on the
// timeticks of its rows) ClaimAgedSeals does: the follower then appends a CreateSegment. A
// ManualFlush (`kfctl flush`) seals every partition's growing segment where it is applied.
//
// Checkpoints (recovery_storage.h): PlanCheckpoint lists the sealed segments still to flush and
// the deletes that hit flushed ones since; CheckpointCommitted records what was written. A
// shard restored from a checkpoint (Restore) holds the flushed segments loaded from their
// objects and replays the log from there: while `replaying` (a message at or below the
// checkpoint's timetick), an Insert below its partition's growing segment is skipped (its
// rows are in a flushed segment, or in a partition dropped since) and a Delete leaves the
// loaded segments alone (their objects and delete logs already hold it).
//
// A search names a timestamp T and sees exactly the rows inserted at <= T and not deleted at
// <= T (growing_segment.h); the caller waits until the pchannel's tSafe reached T first.
// Dropping a partition releases its rows at once: a search at an older T no longer sees them.
//
// Thread-safety: one writer (the applier), concurrent readers. Errors: Search and Get on an
// unknown partition: COLLECTION_NOT_FOUND (NOT_FOUND).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kingfisher/v1/checkpoint.pb.h"
#include "kingfisher/v1/message.pb.h"
#include "message/message_id.h"
#include "search/delete_log_format.h"
#include "search/flat_search.h"
#include "search/growing_segment.h"
#include "search/index_builder.h"
#include "search/top_k.h"

namespace kf::query {

// The partition every collection has ("" in an Insert means it).
inline constexpr std::string_view kDefaultPartition = "_default";
// The partition `name` means ("" is the default one).
inline std::string_view PartitionName(std::string_view name) {
  return name.empty() ? kDefaultPartition : name;
}

// How close the node is to its memory limits (QueryRegistry::memory_pressure): from kHigh on,
// each pchannel's follower seals its largest growing segment every second until kLow, so that
// flushing moves rows out of the process's memory (docs/recovery-storage.md).
enum class MemoryPressure { kLow, kEasing, kHigh };

struct ShardOptions {
  size_t chunk_rows = 8192;
  // Builds the IVF index of full chunks (search/index_builder.h); null: exact search only.
  std::shared_ptr<search::IndexBuilder> indexer;
  // Counts the node's growing bytes (the Insert limit); null: not counted.
  std::shared_ptr<search::MemoryAccount> account;
  // When a growing segment is sealed (docs/recovery-storage.md): at `seal_rows` rows or
  // `seal_bytes` bytes of rows (ClaimSeal), `seal_lifetime` after its first row or `seal_idle`
  // after its last (ClaimAgedSeals); 0: never for that reason.
  size_t seal_rows = 0;
  size_t seal_bytes = 0;
  absl::Duration seal_lifetime = absl::ZeroDuration();
  absl::Duration seal_idle = absl::ZeroDuration();
  // The node's memory pressure, read by the followers once a second; null: always kLow.
  std::function<MemoryPressure()> memory_pressure;
};

struct ShardSchema {
  int64_t collection_id = 0;
  uint32_t dim = 0;
  search::Metric metric = search::Metric::kL2;
};

search::Metric MetricFromProto(kingfisher::v1::MetricType metric);
kingfisher::v1::MetricType MetricToProto(search::Metric metric);

// The message that opened a segment: its timetick (the segment's id) and its LCMID (reading
// the WAL from there sees every message after it, transactions whole).
struct SegmentStart {
  uint64_t ts = 0;
  MessageId from;
};

// A flushed segment loaded back from its object (recovery_storage.h).
struct LoadedSegment {
  uint64_t id = 0;
  std::shared_ptr<search::GrowingSegment> segment;
  std::string object;
  std::vector<std::string> delete_logs;
};
struct RestoredPartition {
  std::string name;
  std::vector<LoadedSegment> flushed;  // in id order
  uint64_t growing_id = 0;
};

// What a checkpoint of one shard has to write (PlanCheckpoint) before it can be committed.
struct ShardCheckpointPlan {
  // The checkpoint as it will be committed; the writer fills in the object keys of `segments`
  // and appends the keys of `delete_logs`.
  kingfisher::v1::ShardCheckpoint checkpoint;
  struct Segment {      // a sealed segment not flushed yet
    int partition = 0;  // indexes into checkpoint.partitions and their flushed
    int flushed = 0;
    std::shared_ptr<const search::GrowingSegment> segment;
    size_t deletes_taken = 0;  // its object holds them: dropped once committed
    // `segment` read back from the object the writer wrote, to take its place once committed:
    // its rows then live once, in the object's bytes (a mapped local object: the page cache),
    // instead of in memory with each list's vector copies. Null: `segment` stays.
    std::shared_ptr<search::GrowingSegment> reloaded;
  };
  struct DeleteLog {  // deletes that hit a flushed segment since its last checkpoint
    int partition = 0;
    int flushed = 0;
    std::vector<search::DeleteRecord> records;
  };
  std::vector<Segment> segments;
  std::vector<DeleteLog> delete_logs;
  // The oldest LCMID from which a growing segment holding rows must be replayed; nullopt when
  // every growing segment is empty.
  std::optional<MessageId> replay_from;
};

class Shard {
 public:
  // A shard created by the message `created` (its _default partition's first segment).
  Shard(std::string vchannel, ShardSchema schema, ShardOptions options, SegmentStart created);

  const std::string& vchannel() const { return vchannel_; }
  const ShardSchema& schema() const { return schema_; }

  // --- The applier.
  // Replaces the partitions by those of a checkpoint, before anything is applied; their growing
  // segments are empty and replayed from `replay_from`.
  void Restore(std::vector<RestoredPartition> partitions, const MessageId& replay_from);
  void CreatePartition(std::string_view name, const SegmentStart& created);
  void DropPartition(std::string_view name);
  // The batch's rows, visible from `start.ts`. An Insert into an unknown partition creates it
  // (the WAL admitted the Insert, so the partition existed when it was appended) unless
  // `replaying`.
  void Insert(const kingfisher::v1::InsertBatch& batch, const SegmentStart& start, bool replaying);
  void Delete(const kingfisher::v1::DeletePks& pks, uint64_t ts, bool replaying);
  // A CreateSegment of `partition`: seals its growing segment (unless empty) and opens segment
  // `start.ts`. A partition that does not exist (dropped since) is left alone.
  void OpenSegment(std::string_view partition, const SegmentStart& start);
  // A ManualFlush: every partition's growing segment is sealed (unless empty) and the next
  // one opened by `start` (all with id start.ts: ids are unique per partition).
  void SealAll(const SegmentStart& start);
  // True, once per growing segment, when `partition`'s has reached seal_rows or seal_bytes:
  // the caller appends a CreateSegment, or gives the claim back (ReleaseSealClaim) if it cannot.
  bool ClaimSeal(std::string_view partition);
  // The partitions whose growing segment holds rows and whose first row is older than
  // seal_lifetime, or last row older than seal_idle, at `now_ms` (unix ms); claimed as ClaimSeal.
  std::vector<std::string> ClaimAgedSeals(uint64_t now_ms);
  // The partition whose growing segment holds the most bytes among those of at least
  // `min_rows` rows not claimed yet, and their bytes; nullopt if none.
  std::optional<std::pair<std::string, size_t>> LargestGrowing(size_t min_rows) const;
  // Claims `partition`'s seal as ClaimSeal does, whatever its size: false if already claimed
  // or gone.
  bool ClaimSealOf(std::string_view partition);
  void ReleaseSealClaim(std::string_view partition);
  // What a checkpoint of this shard as applied so far must write (the applier's thread).
  ShardCheckpointPlan PlanCheckpoint() const;
  // `plan`, its keys filled in, was committed with `replay_from`: its segments are flushed, its
  // deletes logged, and no growing segment needs the WAL below `replay_from` any more (one
  // that was empty gets its rows after the checkpoint), so later checkpoints never ask for
  // what this one let be truncated.
  void CheckpointCommitted(const ShardCheckpointPlan& plan, const MessageId& replay_from);

  // --- Readers.
  // The best `k` rows for `query` (dim floats, as the user gave it) under `filter`, in
  // `partition` or in every partition, best first; an indexed chunk probes `nprobe` lists
  // (0: the index's default).
  absl::StatusOr<std::vector<search::Hit>> Search(
      const float* query, size_t k, size_t nprobe, const search::SearchFilter& filter,
      const std::optional<std::string>& partition) const;
  // The vectors of the rows of `pk` visible at `ts`, in every partition (partition by
  // partition in no particular order, each partition's in insertion order).
  std::vector<std::vector<float>> Get(int64_t pk, uint64_t ts) const;
  size_t rows() const;
  size_t memory_bytes() const;
  size_t index_bytes() const;
  size_t sealed_segments() const;
  size_t flushed_segments() const;  // sealed ones in the object store
  // The id of `partition`'s growing segment; nullopt for a partition that does not exist.
  std::optional<uint64_t> growing_segment_id(std::string_view partition) const;

 private:
  using Segments = std::vector<std::shared_ptr<search::GrowingSegment>>;
  struct Sealed {
    uint64_t id = 0;
    std::shared_ptr<search::GrowingSegment> segment;
    bool loaded = false;  // from its object at Restore
    std::string object;   // empty until flushed
    std::vector<std::string> delete_logs;
    // Deletes that hid rows of it since its last checkpoint (since sealing, until flushed).
    std::vector<search::DeleteRecord> unlogged;
  };
  struct Partition {
    std::vector<Sealed> sealed;  // in id order
    std::shared_ptr<search::GrowingSegment> growing;
    SegmentStart growing_start;
    // Physical ms of the timeticks of the growing segment's first and last rows (0: empty).
    uint64_t first_row_ms = 0;
    uint64_t last_row_ms = 0;
    bool seal_claimed = false;
  };
  std::shared_ptr<search::GrowingSegment> NewSegment() const;
  // Seals `p`'s growing segment (unless empty) and opens the next at `start`.
  void OpenSegmentLocked(Partition& p, const SegmentStart& start)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The partition `name`, created (opened by `created`) if missing.
  Partition& PartitionLocked(std::string_view name, const SegmentStart& created)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  Segments AllSegments() const;
  // The segments a reader looks at: every partition's, or the one named.
  absl::StatusOr<Segments> SegmentsFor(const std::optional<std::string>& partition) const;

  const std::string vchannel_;
  const ShardSchema schema_;
  const ShardOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Partition> partitions_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::query
