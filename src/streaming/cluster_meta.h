// The cluster's metadata keys and values (docs/cluster.md "Keys", docs/ddl.md "Keys"), shared
// by the coordinator, the streaming nodes and discovery.
//
// Every key lives under `kf/<cluster>/`; values are the serialised protobuf messages of
// streaming.proto. Parsing is strict: a value that does not parse, or whose key and content
// disagree (a pchannel key holding another pchannel's assignment), is DATA_LOSS naming the key,
// because the store is the source of truth and a guess would be worse than stopping.
//
// Thread-safety: ClusterKeys is immutable; the functions are pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kingfisher/v1/ddl.pb.h"
#include "kingfisher/v1/streaming.pb.h"

namespace kf::streaming {

class ClusterKeys {
 public:
  explicit ClusterKeys(std::string_view cluster);

  const std::string& root() const { return root_; }  // "kf/<cluster>/"
  std::string coord() const { return root_ + "coord"; }
  std::string tso() const { return root_ + "tso"; }
  std::string nodes_prefix() const { return root_ + "nodes/"; }
  std::string node(int64_t id) const;
  std::string pchannels_prefix() const { return root_ + "pchannels/"; }
  std::string pchannel(std::string_view name) const;

  // DDL (docs/ddl.md). Ids in keys are zero-padded to 20 digits so keys sort by id.
  std::string broadcast_next_id() const { return root_ + "broadcast/next_id"; }
  std::string broadcast_tasks_prefix() const { return root_ + "broadcast/task/"; }
  std::string broadcast_task(uint64_t id) const;
  std::string next_collection_id() const { return root_ + "catalog/next_collection_id"; }
  std::string collections_prefix() const { return root_ + "catalog/collections/"; }
  std::string collection(int64_t id) const;
  // The name index: `catalog/names/<database>/<name>` -> decimal collection id.
  std::string collection_name(std::string_view database, std::string_view name) const;

  // Recovery storage (docs/recovery-storage.md): one PChannelCheckpoint per pchannel.
  std::string checkpoints_prefix() const { return root_ + "checkpoints/"; }
  // The replicate configuration in force (docs/replication.md), written by its broadcast.
  std::string replicate_config() const { return root_ + "replicate/config"; }
  // A secondary's copies of the primary's DDL broadcasts (ReplicatedDdlPiece), by source
  // cluster and broadcast: `replicate/ddl/<cluster>/<id>/<index>` while pending, and
  // `replicate/ddl_done/<cluster>/<id>` once applied, outside the prefix the polls read
  // (docs/replication.md "DDL on the secondary").
  std::string replicated_ddl_prefix() const { return root_ + "replicate/ddl/"; }
  std::string replicated_ddl(std::string_view source, uint64_t broadcast_id, uint32_t index) const;
  std::string replicated_ddl_done(std::string_view source, uint64_t broadcast_id) const;

  // The node id of a key under nodes_prefix() (nullopt for any other key).
  std::optional<int64_t> NodeIdOf(std::string_view key) const;
  // The pchannel name of a key under pchannels_prefix() (nullopt for any other key).
  std::optional<std::string> PChannelOf(std::string_view key) const;

 private:
  std::string root_;
};

absl::StatusOr<kingfisher::v1::PChannelAssignment> ParseAssignment(const ClusterKeys& keys,
                                                                   std::string_view key,
                                                                   std::string_view value);
absl::StatusOr<kingfisher::v1::NodeInfo> ParseNodeInfo(const ClusterKeys& keys,
                                                       std::string_view key,
                                                       std::string_view value);
// DDL values; a task (collection) whose id disagrees with its key is DATA_LOSS too.
absl::StatusOr<kingfisher::v1::BroadcastTask> ParseBroadcastTask(const ClusterKeys& keys,
                                                                 std::string_view key,
                                                                 std::string_view value);
absl::StatusOr<kingfisher::v1::CollectionInfo> ParseCollectionInfo(const ClusterKeys& keys,
                                                                   std::string_view key,
                                                                   std::string_view value);
absl::StatusOr<kingfisher::v1::CoordinatorInfo> ParseCoordinatorInfo(std::string_view key,
                                                                     std::string_view value);

// "ASSIGNED", "ONLINE", ... as kfctl status and the logs print them.
std::string_view PChannelStateName(kingfisher::v1::PChannelState state);
std::string_view NodeStateName(kingfisher::v1::NodeState state);

}  // namespace kf::streaming
