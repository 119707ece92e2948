// Catalog: the collection catalog at the coordinator (docs/semantics.md §5, docs/ddl.md "Catalog").
//
// Collections live in the metadata store (`catalog/collections/<id>`: CollectionInfo, and the
// name index `catalog/names/<database>/<name>` -> id); every change is a DDL broadcast whose
// ACK callback makes the state transition:
//   CreateCollection: validate -> lock the collection key -> ALREADY_EXISTS if the name is
//     taken -> id from `catalog/next_collection_id` -> shards placed on the pchannels by load
//     (catalog_rules.h) -> CREATING + name index written WITH the task -> broadcast
//     CreateCollection (payload CollectionSchema with id and vchannels) -> callback: CREATED.
//   DropCollection: lock -> NOT_FOUND if unknown -> DROPPING written WITH the task (so before
//     any append, atomically: no state has the task without the mark or the mark without the
//     task) -> broadcast DropCollection -> callback: DROPPED, name index removed (the name is
//     free again; ids are never reused).
//   Create/DropPartition: the same on the collection's vchannels (PartitionPayload); a
//     partition is CREATING -> CREATED, DROPPING -> removed. "_default" exists from the start
//     and cannot be dropped.
//   Flush: lock -> NOT_FOUND unless CREATED -> broadcast ManualFlush (no catalog change) ->
//     wait for each pchannel's recovery checkpoint to pass it (docs/recovery-storage.md).
// Every DDL locks ResourceKey::Collection(database, name) (and so, shared, its database and
// the cluster). Reads (Describe, List) go to the store: they see the last committed state.
// A DDL that completes for its caller is logged at info (names, id, vchannels, broadcast id);
// one completed in the background (caller's deadline passed, recovered by the next term) is
// logged by the broadcaster.
//
// Thread-safety: thread-safe. Ownership: borrows the broadcaster (must outlive the catalog).
// Construct it before the broadcaster's Recover: it registers the DDL callbacks.
// On a secondary cluster every DDL is refused with REPLICATE_VIOLATION naming the primary; its
// catalog follows the primary's through ReplicatedCallback.
// Errors: INVALID_ARGUMENT (names, dim 1..kMaxDim, metric L2|IP|COSINE, shards 1..kMaxShards,
// dropping "_default"); ALREADY_EXISTS (COLLECTION_EXISTS for collections); NOT_FOUND
// (COLLECTION_NOT_FOUND for collections); RESOURCE_ACQUIRED (non-blocking, key held);
// FAILED_PRECONDITION (no pchannels configured); the broadcaster's errors otherwise. Bad
// input is refused before anything is written.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kingfisher/v1/collections.pb.h"
#include "kingfisher/v1/ddl.pb.h"
#include "streaming/cluster_meta.h"
#include "streaming/ddl/broadcaster.h"
#include "streaming/ddl/catalog_rules.h"
#include "streaming/ddl/id_block.h"
#include "trace/context.h"

namespace kf::streaming::ddl {

class Catalog {
 public:
  struct Options {
    std::string cluster_id;              // this cluster's: its role under replication
    std::vector<std::string> pchannels;  // the cluster's, in configured order
    absl::Duration call_timeout = absl::Seconds(5);
  };
  struct CollectionSpec {
    std::string database = std::string(kDefaultDatabase);
    std::string name;
    uint32_t dim = 0;
    kingfisher::v1::MetricType metric = kingfisher::v1::METRIC_UNSPECIFIED;
    uint32_t shards = 1;
  };
  // How a DDL call runs: its trace, whether it waits for a held key, its deadline.
  struct Call {
    trace::Context ctx;
    bool blocking = true;
    absl::Time deadline = absl::InfiniteFuture();
  };

  Catalog(Broadcaster* broadcaster, const ClusterKeys& keys, Options options);

  // Returns the collection once CREATED.
  absl::StatusOr<kingfisher::v1::CollectionInfo> CreateCollection(const CollectionSpec& spec,
                                                                  const Call& call);
  absl::Status DropCollection(const std::string& database, const std::string& name,
                              const Call& call);
  // Any state but DROPPED.
  absl::StatusOr<kingfisher::v1::CollectionInfo> DescribeCollection(const std::string& database,
                                                                    const std::string& name,
                                                                    absl::Time deadline);
  // The database's collections that are not DROPPED, by id.
  absl::StatusOr<std::vector<kingfisher::v1::CollectionInfo>> ListCollections(
      const std::string& database, absl::Time deadline);
  absl::Status CreatePartition(const std::string& database, const std::string& collection,
                               const std::string& partition, const Call& call);
  absl::Status DropPartition(const std::string& database, const std::string& collection,
                             const std::string& partition, const Call& call);
  // Broadcasts a ManualFlush to the collection's vchannels (each node seals every growing
  // segment of the shard where it applies it), then waits until each vchannel's pchannel
  // committed a checkpoint at or above its timetick (`checkpoints/<pchannel>`, written by the
  // node's recovery storage), polling until `call.deadline`. DEADLINE_EXCEEDED names the first
  // pchannel still behind.
  absl::StatusOr<std::vector<kingfisher::v1::FlushedVChannel>> Flush(const std::string& database,
                                                                     const std::string& name,
                                                                     const Call& call);

  // The ACK callback of the primary's DDL on a secondary (replicated_ddl.h;
  // catalog_replicated.cc): the catalog takes the primary's collection as it is after the DDL
  // (CreateCollection: CREATED with the primary's id; DropCollection: DROPPED; partitions:
  // CREATED or removed), whatever it held before. (The id counter was raised past the
  // primary's id when its copy was recorded: replicate/ddl_pieces.h.)
  AckCallback ReplicatedCallback();

 private:
  struct Loaded {
    kingfisher::v1::CollectionInfo info;
    int64_t mod_revision = 0;
  };
  absl::StatusOr<Loaded> LoadById(int64_t id, absl::Time deadline) const;
  // The collection (names checked) under its DDL lock, in whatever state; LockCreated:
  // COLLECTION_NOT_FOUND unless CREATED.
  struct Locked {
    ResourceKeyLocks::Guard locks;
    Loaded current;
  };
  absl::StatusOr<Locked> LockCollection(const std::string& database, const std::string& name,
                                        const Call& call) const;
  absl::StatusOr<Locked> LockCreated(const std::string& database, const std::string& name,
                                     const Call& call) const;
  absl::StatusOr<Loaded> LoadByName(const std::string& database, const std::string& name,
                                    absl::Time deadline) const;
  // Live vchannels per pchannel.
  absl::StatusOr<std::map<std::string, int64_t>> Load(absl::Time deadline) const;
  // Broadcasts `message` to the collection's vchannels under `locks`, writing `updated` (the
  // collection with its new mark) with the task. Returns the broadcast id.
  absl::StatusOr<uint64_t> BroadcastChange(ResourceKeyLocks::Guard locks, const Loaded& current,
                                           kingfisher::v1::CollectionInfo updated,
                                           MutableMessage message, const Call& call);
  // The partition DDL shared by Create/DropPartition.
  absl::Status PartitionDdl(const std::string& database, const std::string& collection,
                            const std::string& partition, bool create, const Call& call);
  // The ACK callbacks: each changes the collection its payload names.
  void RegisterCallbacks();
  // Callback writes: `mutate` changes the collection (false: nothing to do) and may add
  // writes; the put is conditioned on the collection being unchanged since read.
  using Mutation = std::function<bool(kingfisher::v1::CollectionInfo& info, AckWrites& extra)>;
  absl::StatusOr<AckWrites> UpdateCollection(int64_t id, const Mutation& mutate) const;
  absl::Time StoreDeadline(absl::Time deadline) const;
  // REPLICATE_VIOLATION naming the primary when the cluster is a secondary (under a DDL's
  // lock, which an AlterReplicateConfig's exclusive one excludes: the role cannot change).
  absl::Status RefuseOnSecondary(absl::Time deadline) const;
  absl::StatusOr<AckWrites> ReplicatedCreate(const AckCallbackContext& c);
  // DropCollection's callback: DROPPED from DROPPING (replicated: from any state but DROPPED),
  // the name index entry removed if it still names the collection.
  absl::StatusOr<AckWrites> MarkDropped(const AckCallbackContext& c, bool replicated);
  // The timetick of `pchannel`'s checkpoint once it is at or above `ts`.
  absl::StatusOr<uint64_t> AwaitCheckpoint(const std::string& pchannel, uint64_t ts,
                                           absl::Time deadline) const;

  Broadcaster* const broadcaster_;
  const ClusterKeys keys_;
  const Options options_;
  IdBlock collection_ids_;
};

}  // namespace kf::streaming::ddl
