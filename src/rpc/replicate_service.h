// The replication services (replicate.proto, docs/replication.md):
// - ReplicateService (kingfisher.v1.Replicate), on every streaming node and the standalone
//   server: a secondary's side of the replicate stream (Append: replicate/secondary_appender.h;
//   GetCheckpoint: where its WAL stands in the primary's pchannel) at the pchannel's term, and
//   Status: the node's replicators and the replicate state of its pchannels.
// - ReplicateAdminService (kingfisher.v1.ReplicateAdmin), where the Collections service is
//   (the acting coordinator, the standalone server): the cluster's replicate configuration,
//   changed by an AlterReplicateConfig broadcast (streaming/ddl/replicate_configurator.h).
// Every call runs on a worker thread (CallWorkers), never on the CompletionLoop.
//
// Thread-safety: thread-safe. Ownership: borrows the registry, the manager and the DDL host.
// Errors: CHANNEL_NOT_EXIST / UNMATCHED_CHANNEL_TERM (ABORTED: re-resolve), INVALID_ARGUMENT,
// the WAL's (REPLICATE_VIOLATION, IGNORED_OPERATION per message), RESOURCE_EXHAUSTED,
// UNAVAILABLE (not the acting coordinator, shutting down).
#pragma once

#include "absl/time/time.h"
#include "kingfisher/v1/replicate.grpc.pb.h"
#include "rpc/async_unary.h"
#include "rpc/call_workers.h"
#include "rpc/collection_service_options.h"
#include "rpc/replicate_service_options.h"
#include "streaming/node/wal_registry.h"

namespace kf::rpc {

class ReplicateService final : public kingfisher::v1::Replicate::AsyncService {
 public:
  ReplicateService(const streaming::node::WalRegistry* registry, ReplicateServiceOptions options)
      : registry_(registry), options_(std::move(options)), workers_(options_.max_calls) {}
  ~ReplicateService() override;

  // Arms the service\'s methods on `loop` (after the server started).
  void Serve(CompletionLoop* loop);

  void HandleAppend(grpc::ServerContext* context,
                    const kingfisher::v1::ReplicateAppendRequest* request,
                    kingfisher::v1::ReplicateAppendResponse* response, UnaryReactor* reactor);
  void HandleGetCheckpoint(grpc::ServerContext* context,
                           const kingfisher::v1::GetReplicateCheckpointRequest* request,
                           kingfisher::v1::GetReplicateCheckpointResponse* response,
                           UnaryReactor* reactor);
  void HandleStatus(grpc::ServerContext* context,
                    const kingfisher::v1::ReplicateStatusRequest* request,
                    kingfisher::v1::ReplicateStatusResponse* response, UnaryReactor* reactor);

  void BeginShutdown() { workers_.Close(); }
  void WaitForCalls(absl::Time deadline) { workers_.WaitIdle(deadline); }

 private:
  template <typename Work>
  void Run(grpc::ServerContext* context, UnaryReactor* reactor, Work work);

  const streaming::node::WalRegistry* const registry_;
  const ReplicateServiceOptions options_;
  CallWorkers workers_;
};

class ReplicateAdminService final : public kingfisher::v1::ReplicateAdmin::AsyncService {
 public:
  explicit ReplicateAdminService(CollectionServiceOptions options)
      : options_(options), workers_(options.max_calls) {}
  ~ReplicateAdminService() override;

  // Arms the service\'s methods on `loop` (after the server started).
  void Serve(CompletionLoop* loop);

  void HandleAlterReplicateConfig(grpc::ServerContext* context,
                                  const kingfisher::v1::AlterReplicateConfigRequest* request,
                                  kingfisher::v1::AlterReplicateConfigResponse* response,
                                  UnaryReactor* reactor);
  void HandleGetReplicateConfig(grpc::ServerContext* context,
                                const kingfisher::v1::GetReplicateConfigRequest* request,
                                kingfisher::v1::GetReplicateConfigResponse* response,
                                UnaryReactor* reactor);

  void BeginShutdown() { workers_.Close(); }
  // As CollectionService's: calls still running at `deadline` are ended by stopping the DDL
  // host (their broadcaster answers UNAVAILABLE).
  void WaitForCalls(absl::Time deadline);

 private:
  template <typename Work>
  void Run(grpc::ServerContext* context, UnaryReactor* reactor, Work work);

  const CollectionServiceOptions options_;
  CallWorkers workers_;
};

}  // namespace kf::rpc
