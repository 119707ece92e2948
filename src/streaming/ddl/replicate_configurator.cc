#include "streaming/ddl/replicate_configurator.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "message/replicate_config.h"
#include "spdlog/spdlog.h"

namespace kf::streaming::ddl {

std::string ReplicateControlVChannel(const std::string& pchannel) {
  return pchannel + "_replicate";
}

ReplicateConfigurator::ReplicateConfigurator(Broadcaster* broadcaster, const ClusterKeys& keys,
                                             Options options)
    : broadcaster_(broadcaster), keys_(keys), options_(std::move(options)) {
  const std::string key = keys_.replicate_config();
  broadcaster_->RegisterCallback(MessageType::kAlterReplicateConfig,
                                 [key](const AckCallbackContext& c) -> absl::StatusOr<AckWrites> {
                                   AckWrites writes;
                                   writes.ops.push_back(meta::Op::Put(key, c.message.payload()));
                                   return writes;
                                 });
}

absl::Status ReplicateConfigurator::CheckSelf(
    const kingfisher::v1::ReplicateConfiguration& config) const {
  RETURN_IF_ERROR(ValidateReplicateConfig(config));
  if (config.clusters().empty()) return absl::OkStatus();  // replication off
  const kingfisher::v1::ReplicateCluster* self = FindCluster(config, options_.cluster_id);
  if (self == nullptr) {
    return StreamingError(StreamingCode::kInvalidArgument,
                          absl::StrCat("replicate configuration: this cluster (",
                                       options_.cluster_id, ") is not in it"));
  }
  if (!std::equal(self->pchannels().begin(), self->pchannels().end(), options_.pchannels.begin(),
                  options_.pchannels.end())) {
    return StreamingError(
        StreamingCode::kInvalidArgument,
        absl::StrCat("replicate configuration: cluster ", options_.cluster_id, " has pchannels [",
                     absl::StrJoin(options_.pchannels, ", "), "], the configuration lists [",
                     absl::StrJoin(self->pchannels(), ", "), "]"));
  }
  return absl::OkStatus();
}

absl::Status ReplicateConfigurator::Alter(const kingfisher::v1::ReplicateConfiguration& config,
                                          const trace::Context& ctx, bool blocking,
                                          absl::Time deadline) {
  RETURN_IF_ERROR(CheckSelf(config));
  ASSIGN_OR_RETURN(ResourceKeyLocks::Guard locks,
                   broadcaster_->Lock({ResourceKey::Cluster()}, blocking, deadline));
  Broadcaster::Request request;
  request.ctx = ctx;
  request.message = MutableMessage(MessageType::kAlterReplicateConfig, config.SerializeAsString());
  for (const std::string& p : options_.pchannels) {
    request.vchannels.push_back(ReplicateControlVChannel(p));
  }
  ASSIGN_OR_RETURN(Broadcaster::Result done,
                   broadcaster_->Broadcast(std::move(locks), std::move(request), deadline));
  const ReplicateRole role = RoleOf(config, options_.cluster_id);
  spdlog::info(
      "replicate: configuration of {} clusters in force, this cluster {} is {} "
      "(broadcast {})",
      config.clusters_size(), options_.cluster_id, ReplicateRoleName(role.kind), done.broadcast_id);
  return absl::OkStatus();
}

absl::StatusOr<kingfisher::v1::ReplicateConfiguration> ReplicateConfigurator::Get(
    absl::Time deadline) const {
  kingfisher::v1::ReplicateConfiguration config;
  absl::StatusOr<meta::GetResult> got = broadcaster_->store().store()->Get(
      keys_.replicate_config(), std::min(deadline, absl::Now() + options_.call_timeout));
  if (absl::IsNotFound(got.status())) return config;
  if (!got.ok()) return got.status();
  if (!config.ParseFromString(got->kv.value)) {
    return absl::DataLossError(
        absl::StrCat("metadata key ", keys_.replicate_config(), ": not a ReplicateConfiguration"));
  }
  return config;
}

}  // namespace kf::streaming::ddl
