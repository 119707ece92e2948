#include "rpc/search_service.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "rpc/unary_call.h"

namespace kf::rpc {

namespace v1 = kingfisher::v1;

SearchService::~SearchService() {
  BeginShutdown();
  WaitForCalls(absl::InfiniteFuture());
}

void SearchService::Serve(CompletionLoop* loop) {
  ServeUnary(loop, this, &SearchService::RequestSearch, &SearchService::HandleSearch);
  ServeUnary(loop, this, &SearchService::RequestGet, &SearchService::HandleGet);
}

template <typename Work>
void SearchService::Run(grpc::ServerContext* context, UnaryReactor* reactor, Work work) {
  RunUnaryOnWorker(workers_, options_.max_call_timeout, context, reactor, "searches",
                   std::move(work));
}

void SearchService::HandleSearch(grpc::ServerContext* context, const v1::SearchRequest* request,
                                 v1::SearchResponse* response, UnaryReactor* reactor) {
  Run(context, reactor, [this, request, response](absl::Time deadline) {
    absl::StatusOr<v1::SearchResponse> r = options_.queries->Search(*request, deadline);
    if (!r.ok()) return r.status();
    *response = *std::move(r);
    return absl::OkStatus();
  });
}

void SearchService::HandleGet(grpc::ServerContext* context, const v1::GetRequest* request,
                              v1::GetResponse* response, UnaryReactor* reactor) {
  Run(context, reactor, [this, request, response](absl::Time deadline) {
    absl::StatusOr<v1::GetResponse> r = options_.queries->Get(*request, deadline);
    if (!r.ok()) return r.status();
    *response = *std::move(r);
    return absl::OkStatus();
  });
}

}  // namespace kf::rpc
