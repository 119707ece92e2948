// QueryRegistry: the query side of the pchannels a node serves (docs/search.md). The node
// follows each WAL it opens (one ChannelFollower per pchannel) and stops following it when it
// closes it; the Search service answers one shard's Search and Get from here.
//
// A call's timestamp T is resolved as search.proto says (STRONG: a fresh timestamp from the
// oracle, above every timetick any node has handed out; BOUNDED: now - staleness; EVENTUALLY: the
// shard's tSafe; an explicit one as given). Then the call waits until the pchannel's tSafe reaches
// T, asking the WAL for a TimeTick at once and again every few milliseconds while it waits (a
// TimeTick is not issued while an append is in flight), so a search waits for the writes before it,
// not for the periodic TimeTick; DEADLINE_EXCEEDED if the deadline passes first.
//
// Tracing (docs/search.md): each call is a `kf.search.shard` / `kf.get.shard` server span, a
// child of the request's traceparent, with a `tsafe.wait` event saying how long it waited.
//
// Thread-safety: thread-safe. Ownership: borrows the TimestampSource (must outlive it); shares
// the followed WALs. Errors: search.proto's table.
#pragma once

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kingfisher/v1/search.pb.h"
#include "query/channel_follower.h"
#include "query/checkpoint_prefetch.h"
#include "query/recovery_storage.h"
#include "storage/tso/timestamp_source.h"
#include "trace/span.h"
#include "wal/wal.h"

namespace kf::query {

inline constexpr uint32_t kMaxTopK = 16384;

// Where Inserts stop under a memory_limit: 90% of it.
constexpr size_t MemoryHighWater(size_t memory_limit) { return memory_limit / 10 * 9; }

// The pressure of `growing` bytes of growing data under `growing_limit` and of `anonymous`
// resident bytes under `memory_limit` (0: no limit): kHigh from 70% of either limit, kLow under
// 50% of both, kEasing between (docs/recovery-storage.md: sealing for memory).
MemoryPressure PressureOf(size_t growing, size_t growing_limit, size_t anonymous,
                          size_t memory_limit);

struct QueryRegistryOptions {
  ShardOptions shard;  // without an account, the registry makes one
  // STRONG's timestamps: above every timestamp any node handed out before the call (the oracle,
  // not a node's batch). Borrowed.
  TimestampSource* tso = nullptr;
  // Called with each timestamp a call is about to wait for. A node whose WALs take timeticks
  // from a batch drops a batch that lies below it (BatchedTimestampSource::DropBatchBelow), so
  // the TimeTick the call asks for comes from a fresh one and reaches it at once.
  std::function<void(TimeTick)> before_wait;
  // Growing bytes (rows and indexes, every followed pchannel) above which AdmitInsert refuses;
  // 0: no limit.
  size_t growing_memory_limit = 0;
  // The process's own resident memory (anonymous: not the mapped segment objects, which the
  // kernel may drop and read again) it must stay under: AdmitInsert refuses from
  // MemoryHighWater(memory_limit) on, the rest left to work already admitted (indexing,
  // flushing, buffers). 0: no limit.
  size_t memory_limit = 0;
  // What the limit is compared with; null: this process's anonymous resident bytes (sampled).
  std::function<size_t()> resident_bytes;
  // Sealed segments and checkpoints (recovery_storage.h); nullopt: every follower replays its
  // whole WAL.
  std::optional<RecoveryStorageOptions> recovery;
};

class QueryRegistry {
 public:
  explicit QueryRegistry(QueryRegistryOptions options);
  ~QueryRegistry();

  // Follows `wal` (replacing the follower of an older term): with recovery storage from now
  // on, its checkpoint loading on the registry's starter thread while the WAL is served
  // (every pchannel seals, flushes and truncates its log, searched or not; a search waits for
  // the load); without, from the first call that searches it on (a pchannel nobody searches
  // costs nothing — no reader, no thread).
  void Follow(std::shared_ptr<wal::Wal> wal);
  // Stops following `pchannel`, if it was.
  void Unfollow(std::string_view pchannel);
  // With recovery storage: starts loading `pchannel`'s checkpoint now, for the follower that
  // Follow will start (CheckpointPrefetch), unless a load is under way or waiting already.
  // Called when the node learns it is to serve `pchannel`, before it opens the WAL.
  void Prefetch(std::string_view pchannel);
  // Drops what Prefetch loaded for `pchannel` (it is served elsewhere), if anything; does not
  // wait for a load in progress.
  void DropPrefetch(std::string_view pchannel);
  // Prefetches waiting to be taken (for tests).
  size_t prefetches() const {
    absl::MutexLock lock(&mu_);
    return prefetches_.size();
  }

  absl::StatusOr<kingfisher::v1::SearchResponse> Search(const kingfisher::v1::SearchRequest& r,
                                                        absl::Time deadline) const;
  absl::StatusOr<kingfisher::v1::GetResponse> Get(const kingfisher::v1::GetRequest& r,
                                                  absl::Time deadline) const;

  // Whether an Insert may be appended now: RESOURCE_EXHAUSTED (RATE_LIMITED) while the growing
  // data is at or above growing_memory_limit or the process's resident memory at or above
  // MemoryHighWater(memory_limit). Cheap (atomic loads; the resident bytes are read at most every
  // 10 ms): the WAL asks for every Insert.
  absl::Status AdmitInsert() const;
  size_t growing_bytes() const { return options_.shard.account->bytes(); }
  size_t growing_memory_limit() const { return options_.growing_memory_limit; }
  size_t memory_limit() const { return options_.memory_limit; }
  const std::optional<RecoveryStorageOptions>& recovery() const { return options_.recovery; }
  // Full chunks waiting for their index or being indexed (0 without an indexer).
  size_t index_queue() const {
    return options_.shard.indexer == nullptr ? 0 : options_.shard.indexer->pending();
  }

  // What /metrics and kfctl status show of each followed pchannel (query_metrics.h); zeros
  // until its follower started (a failed start: checkpoint.last_error says why).
  struct ShardStats {
    std::string vchannel;
    int64_t collection_id = 0;
    size_t rows = 0;
    size_t memory_bytes = 0;  // rows and indexes
    size_t sealed_segments = 0;
    size_t flushed_segments = 0;
  };
  struct PChannelStats {
    std::string pchannel;
    size_t growing_bytes = 0;
    size_t growing_rows = 0;
    uint64_t tsafe = 0;
    ChannelFollower::CheckpointStats checkpoint;
    std::vector<ShardStats> shards;  // by vchannel
    // The checkpoint a restart would start from: the last committed here, else the loaded one
    // (0: none).
    uint64_t checkpoint_ts() const {
      return std::max(checkpoint.committed_ts, checkpoint.loaded_ts);
    }
    // How far the applied timetick is past that checkpoint (what a restart replays beyond it);
    // nullopt before either exists.
    std::optional<double> checkpoint_lag_seconds() const;
  };
  std::vector<PChannelStats> Stats() const;
  // Of each collection with a shard here: the bytes of its rows and of its indexes.
  struct CollectionStats {
    int64_t collection_id = 0;
    size_t growing_bytes = 0;
    size_t index_bytes = 0;
    size_t sealed_segments = 0;   // sealed (docs/recovery-storage.md), flushed or not
    size_t flushed_segments = 0;  // of those, in the object store
  };
  std::vector<CollectionStats> CollectionsStats() const;

 private:
  struct Resolved {
    std::shared_ptr<const ChannelFollower> follower;
    std::shared_ptr<const Shard> shard;
    uint64_t ts = 0;
  };
  // The shard of `vchannel` at the timestamp the call asks for, once applied.
  // Adds the `tsafe.wait` event to `span`.
  absl::StatusOr<Resolved> Resolve(std::string_view vchannel,
                                   kingfisher::v1::ConsistencyLevel consistency, uint64_t timestamp,
                                   uint64_t staleness_ms, absl::Time deadline,
                                   trace::Span& span) const;
  absl::StatusOr<kingfisher::v1::SearchResponse> SearchShard(const kingfisher::v1::SearchRequest& r,
                                                             absl::Time deadline,
                                                             trace::Span& span) const;
  absl::StatusOr<kingfisher::v1::GetResponse> GetShard(const kingfisher::v1::GetRequest& r,
                                                       absl::Time deadline,
                                                       trace::Span& span) const;
  // The follower of `pchannel`, started now if it was not yet: CHANNEL_NOT_EXIST if not
  // followed here, the error of its recovery if it cannot start.
  absl::StatusOr<std::shared_ptr<const ChannelFollower>> FollowerOf(
      std::string_view pchannel) const;

  // With recovery storage: starts the followers of the pchannels in to_start_, one at a time.
  void RunStarter();

  const QueryRegistryOptions options_;
  mutable absl::Mutex mu_;
  std::deque<std::string> to_start_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread starter_;
  struct Followed {
    std::shared_ptr<wal::Wal> wal;
    std::shared_ptr<ChannelFollower> follower;  // null until started (FollowerOf)
    // Held by the one FollowerOf starting it (outside mu_).
    std::shared_ptr<absl::Mutex> starting = std::make_shared<absl::Mutex>();
    absl::Status start_error;  // of the last start that failed
  };
  // Mutable: FollowerOf starts a follower on first use.
  mutable std::map<std::string, Followed, std::less<>> followers_ ABSL_GUARDED_BY(mu_);
  // Apart from followers_: a prefetch outlives the follower of an older term that did not take
  // it. FollowerOf removes one once settled (CheckpointPrefetch::settled); DropPrefetch moves
  // one to dropped_, which the starter thread joins.
  mutable std::map<std::string, std::shared_ptr<CheckpointPrefetch>, std::less<>> prefetches_
      ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<CheckpointPrefetch>> dropped_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::query
