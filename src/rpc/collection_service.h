// CollectionService: the kingfisher.v1.Collections gRPC service (on the CompletionLoop) over the
// acting coordinator's catalog (streaming/coord/ddl_host.h, docs/ddl.md). Served by the
// coordinator and the standalone server; standbys answer UNAVAILABLE.
//
// Every call runs on a worker thread (CallWorkers: one thread per call, at most max_calls),
// never on the CompletionLoop: DDL blocks for store round trips and broadcasts. The
// request maps onto the catalog as: database "" = "default"; DdlOptions.no_wait = a
// non-blocking lock; DdlOptions.traceparent = the parent of `wal.broadcast` (malformed: a new
// trace, W3C fails closed); the deadline is the call's, capped at max_call_timeout (also the
// default).
//
// Shutdown: BeginShutdown refuses new calls (UNAVAILABLE ON_SHUTDOWN); WaitForCalls lets the
// calls in flight finish until the deadline, then stops the DDL host so the rest end with the
// broadcaster's UNAVAILABLE (a persisted DDL completes at the next term), and joins every
// worker: none outlives the service.
//
// Thread-safety: thread-safe. Ownership: borrows the DdlHost (must outlive the service); owns
// the workers. Errors (docs/semantics.md §3 statuses on the wire with the streaming code in the
// details, status_convert.h): those of ddl::Catalog (INVALID_ARGUMENT, ALREADY_EXISTS
// COLLECTION_EXISTS, NOT_FOUND COLLECTION_NOT_FOUND, ABORTED RESOURCE_ACQUIRED,
// DEADLINE_EXCEEDED, UNAVAILABLE), UNAVAILABLE "not the acting coordinator" / "recovering
// DDL tasks" (DdlHost), UNAVAILABLE ON_SHUTDOWN, RESOURCE_EXHAUSTED (max_calls running).
#pragma once

#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kingfisher/v1/collections.grpc.pb.h"
#include "rpc/async_unary.h"
#include "rpc/call_workers.h"
#include "rpc/collection_service_options.h"
#include "streaming/ddl/catalog.h"

namespace kf::rpc {

class CollectionService final : public kingfisher::v1::Collections::AsyncService {
 public:
  explicit CollectionService(CollectionServiceOptions options);
  // BeginShutdown, then WaitForCalls(now).
  ~CollectionService() override;

  // Arms the service's methods on `loop` (after the server started).
  void Serve(CompletionLoop* loop);

  void HandleCreateCollection(grpc::ServerContext* context,
                              const kingfisher::v1::CreateCollectionRequest* request,
                              kingfisher::v1::CreateCollectionResponse* response,
                              UnaryReactor* reactor);
  void HandleDropCollection(grpc::ServerContext* context,
                            const kingfisher::v1::DropCollectionRequest* request,
                            kingfisher::v1::DropCollectionResponse* response,
                            UnaryReactor* reactor);
  void HandleDescribeCollection(grpc::ServerContext* context,
                                const kingfisher::v1::DescribeCollectionRequest* request,
                                kingfisher::v1::DescribeCollectionResponse* response,
                                UnaryReactor* reactor);
  void HandleListCollections(grpc::ServerContext* context,
                             const kingfisher::v1::ListCollectionsRequest* request,
                             kingfisher::v1::ListCollectionsResponse* response,
                             UnaryReactor* reactor);
  void HandleCreatePartition(grpc::ServerContext* context,
                             const kingfisher::v1::PartitionRequest* request,
                             kingfisher::v1::PartitionResponse* response, UnaryReactor* reactor);
  void HandleDropPartition(grpc::ServerContext* context,
                           const kingfisher::v1::PartitionRequest* request,
                           kingfisher::v1::PartitionResponse* response, UnaryReactor* reactor);
  void HandleFlush(grpc::ServerContext* context, const kingfisher::v1::FlushRequest* request,
                   kingfisher::v1::FlushResponse* response, UnaryReactor* reactor);

  // Shutdown, step 1: new calls are refused. Idempotent.
  void BeginShutdown();
  // Step 2: waits for the calls in flight until `deadline`, then stops the DDL host and joins
  // the workers. Returns once none is left.
  void WaitForCalls(absl::Time deadline);

 private:
  // The catalog call of one RPC, run on a worker with the call's deadline.
  using Work = std::function<absl::Status(streaming::ddl::Catalog& catalog, absl::Time deadline)>;
  void Run(grpc::ServerContext* context, UnaryReactor* reactor, Work work);

  const CollectionServiceOptions options_;
  CallWorkers workers_;
};

}  // namespace kf::rpc
