#include "rpc/replicate_service.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "common/hybrid_time.h"
#include "message/replicate_config.h"
#include "replicate/replicate_manager.h"
#include "replicate/secondary_appender.h"
#include "rpc/unary_call.h"
#include "streaming/coord/ddl_host.h"
#include "wire/status_convert.h"

namespace kf::rpc {

namespace v1 = kingfisher::v1;

ReplicateService::~ReplicateService() {
  BeginShutdown();
  WaitForCalls(absl::InfiniteFuture());
}

void ReplicateService::Serve(CompletionLoop* loop) {
  ServeUnary(loop, this, &ReplicateService::RequestAppend, &ReplicateService::HandleAppend);
  ServeUnary(loop, this, &ReplicateService::RequestGetCheckpoint,
             &ReplicateService::HandleGetCheckpoint);
  ServeUnary(loop, this, &ReplicateService::RequestStatus, &ReplicateService::HandleStatus);
}

template <typename Work>
void ReplicateService::Run(grpc::ServerContext* context, UnaryReactor* reactor, Work work) {
  RunUnaryOnWorker(workers_, options_.max_call_timeout, context, reactor, "replicate calls",
                   std::move(work));
}

void ReplicateService::HandleAppend(grpc::ServerContext* context,
                                    const v1::ReplicateAppendRequest* request,
                                    v1::ReplicateAppendResponse* response, UnaryReactor* reactor) {
  Run(context, reactor, [this, request, response](absl::Time) -> absl::Status {
    absl::StatusOr<std::shared_ptr<wal::Wal>> wal =
        streaming::node::GetAtTerm(*registry_, request->pchannel(), request->term());
    if (!wal.ok()) return wal.status();
    *response = replicate::AppendReplicated(**wal, *request, trace::Context(), options_.ddl_pieces);
    return absl::OkStatus();
  });
}

void ReplicateService::HandleGetCheckpoint(grpc::ServerContext* context,
                                           const v1::GetReplicateCheckpointRequest* request,
                                           v1::GetReplicateCheckpointResponse* response,
                                           UnaryReactor* reactor) {
  Run(context, reactor, [this, request, response](absl::Time) -> absl::Status {
    absl::StatusOr<std::shared_ptr<wal::Wal>> wal =
        streaming::node::GetAtTerm(*registry_, request->pchannel(), request->term());
    if (!wal.ok()) return wal.status();
    *response->mutable_state() = (*wal)->replicate_state();
    for (const v1::ReplicateCheckpoint& c : response->state().checkpoints()) {
      if (c.cluster_id() != request->source_cluster_id()) continue;
      response->set_found(true);
      *response->mutable_checkpoint() = c;
    }
    return absl::OkStatus();
  });
}

void ReplicateService::HandleStatus(grpc::ServerContext* context, const v1::ReplicateStatusRequest*,
                                    v1::ReplicateStatusResponse* response, UnaryReactor* reactor) {
  Run(context, reactor, [this, response](absl::Time) -> absl::Status {
    response->set_cluster_id(options_.cluster_id);
    if (options_.manager != nullptr) {
      for (const replicate::ReplicateManager::Entry& e : options_.manager->Status()) {
        v1::ReplicatorStatus* s = response->add_replicators();
        s->set_pchannel(e.options.pchannel);
        s->set_secondary_cluster_id(e.options.secondary_id);
        s->set_secondary_pchannel(e.options.secondary_pchannel);
        s->set_state(e.progress.state);
        s->set_last_error(e.progress.last_error);
        s->set_checkpoint_time_tick(e.progress.checkpoint_tt);
        s->set_primary_time_tick(e.wal_last_tt);
        const uint64_t behind = PhysicalMs(TimeTick(e.wal_last_tt));
        const uint64_t at = PhysicalMs(TimeTick(e.progress.checkpoint_tt));
        // Caught up (replicating, nothing in flight): the primary's last timetick is a TimeTick
        // or a message nobody replicates, not a lag.
        const bool caught_up = e.progress.state == "replicating" && e.progress.pending == 0;
        s->set_lag_ms(caught_up || behind < at ? 0 : behind - at);
        if (caught_up || e.progress.state == "handed_over") {
          s->set_lag_messages(0);
        } else if (e.behind.has_value()) {
          s->set_lag_messages(*e.behind);
        }
        s->set_replicated(e.progress.replicated);
        s->set_ignored(e.progress.ignored);
        s->set_pending(e.progress.pending);
      }
    }
    for (const auto& info : registry_->List()) {
      absl::StatusOr<std::shared_ptr<wal::Wal>> wal = registry_->Get(info.pchannel);
      if (!wal.ok()) continue;
      v1::PChannelReplicateState* p = response->add_pchannels();
      p->set_pchannel(info.pchannel);
      *p->mutable_state() = (*wal)->replicate_state();
      p->set_role(
          std::string(ReplicateRoleName(RoleOf(p->state().config(), options_.cluster_id).kind)));
    }
    return absl::OkStatus();
  });
}

ReplicateAdminService::~ReplicateAdminService() {
  BeginShutdown();
  WaitForCalls(absl::Now());
}

void ReplicateAdminService::WaitForCalls(absl::Time deadline) {
  if (!workers_.WaitIdle(deadline)) {
    options_.ddl->Stop();
    workers_.WaitIdle(absl::InfiniteFuture());
  }
}

void ReplicateAdminService::Serve(CompletionLoop* loop) {
  ServeUnary(loop, this, &ReplicateAdminService::RequestAlterReplicateConfig,
             &ReplicateAdminService::HandleAlterReplicateConfig);
  ServeUnary(loop, this, &ReplicateAdminService::RequestGetReplicateConfig,
             &ReplicateAdminService::HandleGetReplicateConfig);
}

template <typename Work>
void ReplicateAdminService::Run(grpc::ServerContext* context, UnaryReactor* reactor, Work work) {
  absl::StatusOr<std::shared_ptr<streaming::ddl::ReplicateConfigurator>> configurator =
      options_.ddl->replicate();
  if (!configurator.ok()) {
    reactor->Finish(wire::ToGrpcStatus(configurator.status()));
    return;
  }
  RunUnaryOnWorker(
      workers_, options_.max_call_timeout, context, reactor, "replicate configuration calls",
      [work = std::move(work), c = *std::move(configurator)](absl::Time deadline) mutable {
        return work(*c, deadline);
      });
}

void ReplicateAdminService::HandleAlterReplicateConfig(
    grpc::ServerContext* context, const v1::AlterReplicateConfigRequest* request,
    v1::AlterReplicateConfigResponse*, UnaryReactor* reactor) {
  Run(context, reactor, [request](streaming::ddl::ReplicateConfigurator& c, absl::Time deadline) {
    return c.Alter(request->config(), trace::Context(), /*blocking=*/true, deadline);
  });
}

void ReplicateAdminService::HandleGetReplicateConfig(grpc::ServerContext* context,
                                                     const v1::GetReplicateConfigRequest*,
                                                     v1::GetReplicateConfigResponse* response,
                                                     UnaryReactor* reactor) {
  Run(context, reactor, [response](streaming::ddl::ReplicateConfigurator& c, absl::Time deadline) {
    absl::StatusOr<v1::ReplicateConfiguration> config = c.Get(deadline);
    if (!config.ok()) return config.status();
    response->set_cluster_id(c.cluster_id());
    for (const std::string& p : c.pchannels()) response->add_pchannels(p);
    *response->mutable_config() = *std::move(config);
    return absl::OkStatus();
  });
}

}  // namespace kf::rpc
