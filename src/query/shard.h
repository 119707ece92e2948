// Shard: the data of one collection vchannel on the node that owns its pchannel
// (docs/search.md): per partition, its sealed segments and one growing segment, written by the
// pchannel's applier (channel_applier.h) in timetick order and searched by any number of
// threads.
//
// Segments (docs/recovery-storage.md): a partition's rows go to its growing segment until a
// CreateSegment message of the partition is applied; that seals it (it keeps answering searches
// and taking deletes) and opens the next one, whose id is the message's timetick (the first
// one's is 0). The boundaries are WAL messages, so every replay of the log draws them in the
// same place. Once a growing segment holds `seal_rows` rows, ClaimSeal says so once: the
// applier then asks for a CreateSegment to be appended.
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
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kingfisher/v1/message.pb.h"
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

struct ShardOptions {
  size_t chunk_rows = 8192;
  // Builds the IVF index of full chunks (search/index_builder.h); null: exact search only.
  std::shared_ptr<search::IndexBuilder> indexer;
  // Counts the node's growing bytes (the Insert limit); null: not counted.
  std::shared_ptr<search::MemoryAccount> account;
  // Rows at which a growing segment is sealed (ClaimSeal); 0: never.
  size_t seal_rows = 0;
};

struct ShardSchema {
  int64_t collection_id = 0;
  uint32_t dim = 0;
  search::Metric metric = search::Metric::kL2;
};

class Shard {
 public:
  Shard(std::string vchannel, ShardSchema schema, ShardOptions options);

  const std::string& vchannel() const { return vchannel_; }
  const ShardSchema& schema() const { return schema_; }

  // --- The applier.
  void CreatePartition(std::string_view name);
  void DropPartition(std::string_view name);
  // The batch's rows, visible from `ts`. An Insert into an unknown partition creates it (the
  // WAL admitted the Insert, so the partition existed when it was appended).
  void Insert(const kingfisher::v1::InsertBatch& batch, uint64_t ts);
  void Delete(const kingfisher::v1::DeletePks& pks, uint64_t ts);
  // A CreateSegment of `partition` at timetick `id`: seals its growing segment (unless empty)
  // and opens segment `id`. A partition that does not exist (dropped since) is left alone.
  void OpenSegment(std::string_view partition, uint64_t id);
  // True, once per growing segment, when `partition`'s has reached seal_rows: the caller
  // appends a CreateSegment, or gives the claim back (ReleaseSealClaim) if it cannot.
  bool ClaimSeal(std::string_view partition);
  void ReleaseSealClaim(std::string_view partition);

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
  // The id of `partition`'s growing segment (0 before its first CreateSegment); nullopt for a
  // partition that does not exist.
  std::optional<uint64_t> growing_segment_id(std::string_view partition) const;

 private:
  using Segments = std::vector<std::shared_ptr<search::GrowingSegment>>;
  struct Partition {
    Segments sealed;
    std::shared_ptr<search::GrowingSegment> growing;
    uint64_t growing_id = 0;
    bool seal_claimed = false;
  };
  std::shared_ptr<search::GrowingSegment> NewSegment() const;
  Partition& PartitionLocked(std::string_view name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
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
