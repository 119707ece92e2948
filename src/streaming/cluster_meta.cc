#include "streaming/cluster_meta.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/absl_compat.h"

namespace kf::streaming {
namespace {

absl::Status Corrupt(std::string_view key, std::string_view what) {
  return absl::DataLossError(absl::StrCat("metadata key ", ToAbsl(key), ": ", ToAbsl(what)));
}

template <typename T>
absl::StatusOr<T> ParseProto(std::string_view key, std::string_view value, std::string_view type) {
  T out;
  if (!out.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return Corrupt(key, absl::StrCat("value is not a ", ToAbsl(type)));
  }
  return out;
}

}  // namespace

ClusterKeys::ClusterKeys(std::string_view cluster)
    : root_(absl::StrCat("kf/", ToAbsl(cluster), "/")) {}

std::string ClusterKeys::node(int64_t id) const { return absl::StrCat(nodes_prefix(), id); }

std::string ClusterKeys::pchannel(std::string_view name) const {
  return absl::StrCat(pchannels_prefix(), ToAbsl(name));
}

std::string ClusterKeys::broadcast_task(uint64_t id) const {
  return absl::StrCat(broadcast_tasks_prefix(), absl::StrFormat("%020u", id));
}

std::string ClusterKeys::replicated_ddl(std::string_view source, uint64_t broadcast_id,
                                        uint32_t index) const {
  return absl::StrCat(replicated_ddl_prefix(), ToAbsl(source), "/",
                      absl::StrFormat("%020u", broadcast_id), "/", index);
}

std::string ClusterKeys::replicated_ddl_done(std::string_view source, uint64_t broadcast_id) const {
  return absl::StrCat(root_, "replicate/ddl_done/", ToAbsl(source), "/",
                      absl::StrFormat("%020u", broadcast_id));
}

std::string ClusterKeys::collection(int64_t id) const {
  return absl::StrCat(collections_prefix(), absl::StrFormat("%020d", id));
}

std::string ClusterKeys::collection_name(std::string_view database, std::string_view name) const {
  return absl::StrCat(root_, "catalog/names/", ToAbsl(database), "/", ToAbsl(name));
}

std::optional<int64_t> ClusterKeys::NodeIdOf(std::string_view key) const {
  const std::string prefix = nodes_prefix();
  if (!key.starts_with(prefix)) return std::nullopt;
  int64_t id = 0;
  if (!absl::SimpleAtoi(ToAbsl(key.substr(prefix.size())), &id) || id <= 0) return std::nullopt;
  return id;
}

std::optional<std::string> ClusterKeys::PChannelOf(std::string_view key) const {
  const std::string prefix = pchannels_prefix();
  if (!key.starts_with(prefix) || key.size() == prefix.size()) return std::nullopt;
  return std::string(key.substr(prefix.size()));
}

absl::StatusOr<kingfisher::v1::PChannelAssignment> ParseAssignment(const ClusterKeys& keys,
                                                                   std::string_view key,
                                                                   std::string_view value) {
  auto a = ParseProto<kingfisher::v1::PChannelAssignment>(key, value, "PChannelAssignment");
  if (!a.ok()) return a.status();
  std::optional<std::string> name = keys.PChannelOf(key);
  if (!name || *name != a->pchannel()) return Corrupt(key, "assignment of another pchannel");
  if (a->term() < 0 || a->node() < 0) return Corrupt(key, "negative term or node");
  return a;
}

absl::StatusOr<kingfisher::v1::NodeInfo> ParseNodeInfo(const ClusterKeys& keys,
                                                       std::string_view key,
                                                       std::string_view value) {
  auto n = ParseProto<kingfisher::v1::NodeInfo>(key, value, "NodeInfo");
  if (!n.ok()) return n.status();
  std::optional<int64_t> id = keys.NodeIdOf(key);
  if (!id || *id != n->id()) return Corrupt(key, "information of another node");
  return n;
}

absl::StatusOr<kingfisher::v1::BroadcastTask> ParseBroadcastTask(const ClusterKeys& keys,
                                                                 std::string_view key,
                                                                 std::string_view value) {
  auto t = ParseProto<kingfisher::v1::BroadcastTask>(key, value, "BroadcastTask");
  if (!t.ok()) return t.status();
  if (keys.broadcast_task(t->broadcast_id()) != key) return Corrupt(key, "task of another id");
  return t;
}

absl::StatusOr<kingfisher::v1::CollectionInfo> ParseCollectionInfo(const ClusterKeys& keys,
                                                                   std::string_view key,
                                                                   std::string_view value) {
  auto c = ParseProto<kingfisher::v1::CollectionInfo>(key, value, "CollectionInfo");
  if (!c.ok()) return c.status();
  if (keys.collection(c->schema().collection_id()) != key) {
    return Corrupt(key, "collection of another id");
  }
  return c;
}

absl::StatusOr<kingfisher::v1::CoordinatorInfo> ParseCoordinatorInfo(std::string_view key,
                                                                     std::string_view value) {
  return ParseProto<kingfisher::v1::CoordinatorInfo>(key, value, "CoordinatorInfo");
}

std::string_view PChannelStateName(kingfisher::v1::PChannelState state) {
  switch (state) {
    case kingfisher::v1::PCHANNEL_UNINITIALIZED:
      return "UNINITIALIZED";
    case kingfisher::v1::PCHANNEL_ASSIGNING:
      return "ASSIGNING";
    case kingfisher::v1::PCHANNEL_ASSIGNED:
      return "ASSIGNED";
    case kingfisher::v1::PCHANNEL_UNAVAILABLE:
      return "UNAVAILABLE";
    default:
      return "UNKNOWN";
  }
}

std::string_view NodeStateName(kingfisher::v1::NodeState state) {
  switch (state) {
    case kingfisher::v1::NODE_ONLINE:
      return "ONLINE";
    case kingfisher::v1::NODE_DRAINING:
      return "DRAINING";
    default:
      return "UNKNOWN";
  }
}

}  // namespace kf::streaming
