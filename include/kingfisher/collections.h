// Collections in the client API (docs/semantics.md §5): the value types of Client::CreateCollection
// and friends, and the insert/delete helpers that route rows to a collection's shards.
//
// A collection has `shards` vchannels `<pchannel>_<id>v<shard>`; a row with primary key `pk`
// belongs to shard ShardOfPk(pk, shards), so every Insert and Delete of that pk goes to the same
// vchannel (and a consumer of that vchannel sees them in order).
//
// Thread-safety: plain values and pure functions. Errors: see each function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kingfisher/message.h"
#include "kingfisher/types.h"

namespace kingfisher {

struct CollectionSpec {
  std::string name;           // [A-Za-z_][A-Za-z0-9_]{0,254}
  uint32_t dim = 0;           // 1..32768
  std::string metric = "L2";  // L2 | IP | COSINE
  uint32_t shards = 1;        // 1..64
};

struct PartitionInfo {
  std::string name;
  std::string state;  // CREATING | CREATED | DROPPING
};

struct CollectionInfo {
  int64_t id = 0;
  std::string database;
  std::string name;
  uint32_t dim = 0;
  std::string metric;
  uint32_t shards = 0;
  std::vector<std::string> vchannels;  // vchannels[i] is shard i's
  std::string state;                   // CREATING | CREATED | DROPPING
  std::vector<PartitionInfo> partitions;
  int64_t create_time_ms = 0;  // unix ms
};

// How a DDL call runs.
// One shard of a Flush: every row acknowledged before the call is in a sealed segment in the
// object store, named by the pchannel's checkpoint at checkpoint_timetick.
struct FlushedShard {
  std::string vchannel;
  uint64_t flush_timetick = 0;
  uint64_t checkpoint_timetick = 0;
};

struct DdlOptions {
  // Fail with RESOURCE_ACQUIRED (ABORTED) instead of waiting while another DDL holds the name.
  bool no_wait = false;
  // Overall deadline; nullopt means now + ClientOptions::ddl_timeout.
  std::optional<Deadline> deadline;
  // The caller's trace context: the parent of the coordinator's `wal.broadcast`.
  TraceContext trace;
};

// The shard of primary key `pk` in a collection of `shards` shards (REQUIRES shards >= 1):
// fmix64(uint64(pk)) % shards, where fmix64 is MurmurHash3's 64-bit finalizer
//   k ^= k >> 33; k *= 0xff51afd7ed558ccd; k ^= k >> 33; k *= 0xc4ceb9fe1a85ec53; k ^= k >> 33.
// A wire-level contract (consumers and search nodes route by it): it never changes.
uint32_t ShardOfPk(int64_t pk, uint32_t shards);

// The Insert messages for rows (pks[i], vectors[i*dim .. (i+1)*dim)) of `collection`, one per
// shard that gets rows (in shard order, rows in input order), addressed to that shard's vchannel
// (in `partition`, "" = `_default`). The shard count is vchannels.size().
// INVALID_ARGUMENT: vectors.size() != pks.size() * dim, no rows, dim 0, or the collection has
// no vchannels or a `shards` (when set) other than vchannels.size().
absl::StatusOr<std::vector<Message>> InsertMessages(const CollectionInfo& collection,
                                                    const std::vector<int64_t>& pks,
                                                    const std::vector<float>& vectors,
                                                    const std::string& partition = "");
// The Delete messages for `pks`, one per shard that gets keys (in shard order).
// INVALID_ARGUMENT: no pks, or the vchannels are wrong as for InsertMessages.
absl::StatusOr<std::vector<Message>> DeleteMessages(const CollectionInfo& collection,
                                                    const std::vector<int64_t>& pks);

}  // namespace kingfisher
