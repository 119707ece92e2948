// SearchService: the kingfisher.v1.Search gRPC service (search.proto, docs/search.md) over the
// node's QueryRegistry: one shard's Search and Get, served by the node that owns the shard's
// pchannel (the standalone server and every streaming node).
//
// A call may wait for its shard to apply its timestamp, so every call runs on a worker thread
// (CallWorkers: one per call, at most `max_calls`, beyond which RESOURCE_EXHAUSTED), never on
// the CompletionLoop. Its deadline is the call's, capped at `max_call_timeout`.
//
// Thread-safety: thread-safe. Ownership: borrows the registry (must outlive the service).
// Errors: search.proto's, plus UNAVAILABLE ON_SHUTDOWN and RESOURCE_EXHAUSTED.
#pragma once

#include "absl/time/time.h"
#include "kingfisher/v1/search.grpc.pb.h"
#include "query/query_registry.h"
#include "rpc/async_unary.h"
#include "rpc/call_workers.h"
#include "rpc/search_service_options.h"

namespace kf::rpc {

class SearchService final : public kingfisher::v1::Search::AsyncService {
 public:
  explicit SearchService(SearchServiceOptions options)
      : options_(options), workers_(options.max_calls) {}
  ~SearchService() override;

  // Arms the service\'s methods on `loop` (after the server started).
  void Serve(CompletionLoop* loop);

  void HandleSearch(grpc::ServerContext* context, const kingfisher::v1::SearchRequest* request,
                    kingfisher::v1::SearchResponse* response, UnaryReactor* reactor);
  void HandleGet(grpc::ServerContext* context, const kingfisher::v1::GetRequest* request,
                 kingfisher::v1::GetResponse* response, UnaryReactor* reactor);

  // New calls get ON_SHUTDOWN; WaitForCalls lets the running ones finish until `deadline`.
  void BeginShutdown() { workers_.Close(); }
  void WaitForCalls(absl::Time deadline) { workers_.WaitIdle(deadline); }

 private:
  // Runs `work` on a worker with the call's deadline and finishes the call with its status.
  template <typename Work>
  void Run(grpc::ServerContext* context, UnaryReactor* reactor, Work work);

  const SearchServiceOptions options_;
  CallWorkers workers_;
};

}  // namespace kf::rpc
