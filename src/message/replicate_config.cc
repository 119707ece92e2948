#include "message/replicate_config.h"

#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace kf {
namespace {

using kingfisher::v1::ReplicateCluster;
using kingfisher::v1::ReplicateConfiguration;
using kingfisher::v1::ReplicateTopologyEdge;

template <typename... Parts>
absl::Status Invalid(const Parts&... parts) {
  return StreamingError(StreamingCode::kInvalidArgument,
                        absl::StrCat("replicate configuration: ", parts...));
}

absl::Status CheckCluster(const ReplicateCluster& c, int expected_pchannels) {
  if (c.cluster_id().empty()) return Invalid("a cluster has an empty id");
  if (c.endpoint().empty()) return Invalid("cluster ", c.cluster_id(), " has no endpoint");
  if (c.pchannels().empty()) return Invalid("cluster ", c.cluster_id(), " has no pchannels");
  if (expected_pchannels >= 0 && c.pchannels_size() != expected_pchannels) {
    return Invalid("cluster ", c.cluster_id(), " has ", c.pchannels_size(),
                   " pchannels and the first cluster ", expected_pchannels,
                   ": clusters map pchannels by index, so every cluster needs as many");
  }
  std::set<std::string> seen;
  for (const std::string& p : c.pchannels()) {
    if (p.empty()) return Invalid("cluster ", c.cluster_id(), " has an empty pchannel name");
    if (!seen.insert(p).second) {
      return Invalid("cluster ", c.cluster_id(), " names pchannel ", p, " twice");
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateReplicateConfig(const ReplicateConfiguration& config) {
  if (config.clusters().empty()) {
    if (!config.topology().empty()) return Invalid("edges but no clusters");
    return absl::OkStatus();
  }
  std::set<std::string> ids;
  for (const ReplicateCluster& c : config.clusters()) {
    const int expected = ids.empty() ? -1 : config.clusters(0).pchannels_size();
    if (absl::Status bad = CheckCluster(c, expected); !bad.ok()) return bad;
    if (!ids.insert(c.cluster_id()).second) return Invalid("cluster ", c.cluster_id(), " twice");
  }
  std::string primary;
  std::set<std::string> targets;
  for (const ReplicateTopologyEdge& e : config.topology()) {
    const std::string edge = absl::StrCat(e.source_cluster_id(), " -> ", e.target_cluster_id());
    if (!ids.contains(e.source_cluster_id()) || !ids.contains(e.target_cluster_id())) {
      return Invalid("edge ", edge, " names an unknown cluster");
    }
    if (e.source_cluster_id() == e.target_cluster_id()) {
      return Invalid("edge ", edge, " is a cycle: a cluster cannot replicate to itself");
    }
    if (primary.empty()) primary = e.source_cluster_id();
    if (e.source_cluster_id() != primary) {
      return Invalid("edge ", edge, ": clusters ", primary, " and ", e.source_cluster_id(),
                     " are both sources; the topology is a star with one primary");
    }
    if (!targets.insert(e.target_cluster_id()).second) {
      return Invalid("edge ", edge, " twice");
    }
  }
  if (targets.contains(primary)) {
    return Invalid("cluster ", primary, " is both the primary and a secondary: a cycle");
  }
  if (primary.empty() && ids.size() > 1) {
    return Invalid(ids.size(), " clusters and no edge: name the primary of the secondaries");
  }
  for (const std::string& id : ids) {
    if (id != primary && !targets.contains(id) && ids.size() > 1) {
      return Invalid("cluster ", id, " is neither the primary nor a secondary of it");
    }
  }
  return absl::OkStatus();
}

bool HasEdge(const ReplicateConfiguration& config, std::string_view source,
             std::string_view target) {
  for (const ReplicateTopologyEdge& e : config.topology()) {
    if (e.source_cluster_id() == source && e.target_cluster_id() == target) return true;
  }
  return false;
}

const ReplicateCluster* FindCluster(const ReplicateConfiguration& config,
                                    std::string_view cluster_id) {
  for (const ReplicateCluster& c : config.clusters()) {
    if (c.cluster_id() == cluster_id) return &c;
  }
  return nullptr;
}

ReplicateRole RoleOf(const ReplicateConfiguration& config, std::string_view cluster_id) {
  ReplicateRole role;
  const ReplicateCluster* self = FindCluster(config, cluster_id);
  if (self == nullptr) return role;
  role.kind = ReplicateRole::Kind::kPrimary;
  role.primary_id = self->cluster_id();
  role.primary_endpoint = self->endpoint();
  for (const ReplicateTopologyEdge& e : config.topology()) {
    if (e.target_cluster_id() == cluster_id) {
      const ReplicateCluster* primary = FindCluster(config, e.source_cluster_id());
      role.kind = ReplicateRole::Kind::kSecondary;
      role.primary_id = e.source_cluster_id();
      role.primary_endpoint = primary != nullptr ? primary->endpoint() : "";
      role.secondaries = 0;
      return role;
    }
    if (e.source_cluster_id() == cluster_id) ++role.secondaries;
  }
  return role;
}

std::string_view ReplicateRoleName(ReplicateRole::Kind kind) {
  switch (kind) {
    case ReplicateRole::Kind::kPrimary:
      return "primary";
    case ReplicateRole::Kind::kSecondary:
      return "secondary";
    case ReplicateRole::Kind::kNone:
      break;
  }
  return "none";
}

std::optional<std::string> ClusterOfPChannel(const ReplicateConfiguration& config,
                                             std::string_view pchannel) {
  for (const ReplicateCluster& c : config.clusters()) {
    for (const std::string& p : c.pchannels()) {
      if (p == pchannel) return c.cluster_id();
    }
  }
  return std::nullopt;
}

std::optional<std::string> PeerPChannel(const ReplicateConfiguration& config, std::string_view from,
                                        std::string_view pchannel, std::string_view to) {
  const ReplicateCluster* a = FindCluster(config, from);
  const ReplicateCluster* b = FindCluster(config, to);
  if (a == nullptr || b == nullptr) return std::nullopt;
  for (int i = 0; i < a->pchannels_size() && i < b->pchannels_size(); ++i) {
    if (a->pchannels(i) == pchannel) return b->pchannels(i);
  }
  return std::nullopt;
}

}  // namespace kf
