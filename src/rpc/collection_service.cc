#include "rpc/collection_service.h"

#include <chrono>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "rpc/unary_call.h"
#include "streaming/coord/ddl_host.h"
#include "streaming/ddl/catalog_rules.h"
#include "trace/traceparent.h"
#include "wire/status_convert.h"

namespace kf::rpc {
namespace {

namespace v1 = kingfisher::v1;

std::string Database(const std::string& database) {
  return database.empty() ? std::string(streaming::ddl::kDefaultDatabase) : database;
}

streaming::ddl::Catalog::Call MakeCall(const v1::DdlOptions& options, absl::Time deadline) {
  streaming::ddl::Catalog::Call call;
  call.blocking = !options.no_wait();
  call.deadline = deadline;
  if (auto parent = trace::ParseTraceparent(options.traceparent())) {
    call.ctx = trace::Context().WithRemoteParent(*parent);
  }
  return call;
}

}  // namespace

CollectionService::CollectionService(CollectionServiceOptions options)
    : options_(options), workers_(options.max_calls) {}

CollectionService::~CollectionService() {
  BeginShutdown();
  WaitForCalls(absl::Now());
}

void CollectionService::Serve(CompletionLoop* loop) {
  ServeUnary(loop, this, &CollectionService::RequestCreateCollection,
             &CollectionService::HandleCreateCollection);
  ServeUnary(loop, this, &CollectionService::RequestDropCollection,
             &CollectionService::HandleDropCollection);
  ServeUnary(loop, this, &CollectionService::RequestDescribeCollection,
             &CollectionService::HandleDescribeCollection);
  ServeUnary(loop, this, &CollectionService::RequestListCollections,
             &CollectionService::HandleListCollections);
  ServeUnary(loop, this, &CollectionService::RequestCreatePartition,
             &CollectionService::HandleCreatePartition);
  ServeUnary(loop, this, &CollectionService::RequestDropPartition,
             &CollectionService::HandleDropPartition);
  ServeUnary(loop, this, &CollectionService::RequestFlush, &CollectionService::HandleFlush);
}

void CollectionService::Run(grpc::ServerContext* context, UnaryReactor* reactor, Work work) {
  // Not acting (or still recovering) is known at once: no thread for it.
  absl::StatusOr<std::shared_ptr<streaming::ddl::Catalog>> catalog = options_.ddl->catalog();
  if (!catalog.ok()) {
    reactor->Finish(wire::ToGrpcStatus(catalog.status()));
    return;
  }
  RunUnaryOnWorker(workers_, options_.max_call_timeout, context, reactor, "collection calls",
                   [work = std::move(work), catalog = *std::move(catalog)](
                       absl::Time deadline) mutable { return work(*catalog, deadline); });
}

void CollectionService::HandleCreateCollection(grpc::ServerContext* context,
                                               const v1::CreateCollectionRequest* request,
                                               v1::CreateCollectionResponse* response,
                                               UnaryReactor* reactor) {
  Run(context, reactor, [request, response](streaming::ddl::Catalog& catalog, absl::Time deadline) {
    streaming::ddl::Catalog::CollectionSpec spec;
    spec.database = Database(request->database());
    spec.name = request->name();
    spec.dim = request->dim();
    spec.metric = request->metric();
    spec.shards = request->shards();
    absl::StatusOr<v1::CollectionInfo> created =
        catalog.CreateCollection(spec, MakeCall(request->options(), deadline));
    if (!created.ok()) return created.status();
    *response->mutable_collection() = *std::move(created);
    return absl::OkStatus();
  });
}

void CollectionService::HandleDropCollection(grpc::ServerContext* context,
                                             const v1::DropCollectionRequest* request,
                                             v1::DropCollectionResponse* /*response*/,
                                             UnaryReactor* reactor) {
  Run(context, reactor, [request](streaming::ddl::Catalog& catalog, absl::Time deadline) {
    return catalog.DropCollection(Database(request->database()), request->name(),
                                  MakeCall(request->options(), deadline));
  });
}

void CollectionService::HandleDescribeCollection(grpc::ServerContext* context,
                                                 const v1::DescribeCollectionRequest* request,
                                                 v1::DescribeCollectionResponse* response,
                                                 UnaryReactor* reactor) {
  Run(context, reactor, [request, response](streaming::ddl::Catalog& catalog, absl::Time deadline) {
    absl::StatusOr<v1::CollectionInfo> info =
        catalog.DescribeCollection(Database(request->database()), request->name(), deadline);
    if (!info.ok()) return info.status();
    *response->mutable_collection() = *std::move(info);
    return absl::OkStatus();
  });
}

void CollectionService::HandleListCollections(grpc::ServerContext* context,
                                              const v1::ListCollectionsRequest* request,
                                              v1::ListCollectionsResponse* response,
                                              UnaryReactor* reactor) {
  Run(context, reactor, [request, response](streaming::ddl::Catalog& catalog, absl::Time deadline) {
    absl::StatusOr<std::vector<v1::CollectionInfo>> list =
        catalog.ListCollections(Database(request->database()), deadline);
    if (!list.ok()) return list.status();
    for (v1::CollectionInfo& info : *list) *response->add_collections() = std::move(info);
    return absl::OkStatus();
  });
}

void CollectionService::HandleCreatePartition(grpc::ServerContext* context,
                                              const v1::PartitionRequest* request,
                                              v1::PartitionResponse* /*response*/,
                                              UnaryReactor* reactor) {
  Run(context, reactor, [request](streaming::ddl::Catalog& catalog, absl::Time deadline) {
    return catalog.CreatePartition(Database(request->database()), request->collection(),
                                   request->partition(), MakeCall(request->options(), deadline));
  });
}

void CollectionService::HandleDropPartition(grpc::ServerContext* context,
                                            const v1::PartitionRequest* request,
                                            v1::PartitionResponse* /*response*/,
                                            UnaryReactor* reactor) {
  Run(context, reactor, [request](streaming::ddl::Catalog& catalog, absl::Time deadline) {
    return catalog.DropPartition(Database(request->database()), request->collection(),
                                 request->partition(), MakeCall(request->options(), deadline));
  });
}

void CollectionService::HandleFlush(grpc::ServerContext* context, const v1::FlushRequest* request,
                                    v1::FlushResponse* response, UnaryReactor* reactor) {
  Run(context, reactor, [request, response](streaming::ddl::Catalog& catalog, absl::Time deadline) {
    absl::StatusOr<std::vector<v1::FlushedVChannel>> flushed = catalog.Flush(
        Database(request->database()), request->name(), MakeCall(request->options(), deadline));
    if (!flushed.ok()) return flushed.status();
    for (v1::FlushedVChannel& f : *flushed) *response->add_vchannels() = std::move(f);
    return absl::OkStatus();
  });
}

void CollectionService::BeginShutdown() { workers_.Close(); }

void CollectionService::WaitForCalls(absl::Time deadline) {
  if (!workers_.WaitIdle(deadline)) {
    // Ends every DDL still waiting: its broadcaster stops and answers UNAVAILABLE.
    options_.ddl->Stop();
    workers_.WaitIdle(absl::InfiniteFuture());
  }
}

}  // namespace kf::rpc
