// The replicate configuration (docs/replication.md "Topology"): which clusters replicate to
// which, carried as the payload of an AlterReplicateConfig broadcast.
//
// A valid configuration is empty (replication off) or a star: every cluster has a unique
// non-empty id, an endpoint and the same number of pchannels (no name twice in a cluster);
// every edge joins two known, different clusters; one cluster (the primary) is the source of
// every edge and the others are each the target of exactly one; so there is no cycle. A
// single cluster without edges is a primary with no secondaries.
//
// Pure functions: thread-safe. Errors: StreamingError(kInvalidArgument) naming the offending
// cluster or edge.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kingfisher/v1/replicate.pb.h"

namespace kf {

absl::Status ValidateReplicateConfig(const kingfisher::v1::ReplicateConfiguration& config);

// What a cluster is under a (valid) configuration.
struct ReplicateRole {
  enum class Kind { kNone, kPrimary, kSecondary };
  Kind kind = Kind::kNone;  // kNone: replication is off or the cluster is not in it
  // kSecondary: its primary; kPrimary: itself.
  std::string primary_id;
  std::string primary_endpoint;
  size_t secondaries = 0;  // kPrimary: how many
};
ReplicateRole RoleOf(const kingfisher::v1::ReplicateConfiguration& config,
                     std::string_view cluster_id);

// "none", "primary" or "secondary".
std::string_view ReplicateRoleName(ReplicateRole::Kind kind);

// Whether `config` has the edge `source` -> `target`.
bool HasEdge(const kingfisher::v1::ReplicateConfiguration& config, std::string_view source,
             std::string_view target);

// The cluster named `cluster_id`, or null.
const kingfisher::v1::ReplicateCluster* FindCluster(
    const kingfisher::v1::ReplicateConfiguration& config, std::string_view cluster_id);

// The cluster that has `pchannel`, or nullopt.
std::optional<std::string> ClusterOfPChannel(const kingfisher::v1::ReplicateConfiguration& config,
                                             std::string_view pchannel);

// The pchannel of `to` at the index `pchannel` has in `from` (clusters map pchannels by
// index); nullopt if either cluster is unknown or `from` has no such pchannel.
std::optional<std::string> PeerPChannel(const kingfisher::v1::ReplicateConfiguration& config,
                                        std::string_view from, std::string_view pchannel,
                                        std::string_view to);

}  // namespace kf
