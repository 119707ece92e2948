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

template <typename Work>
grpc::ServerUnaryReactor* SearchService::Run(grpc::CallbackServerContext* context, Work work) {
  return RunUnaryOnWorker(workers_, options_.max_call_timeout, context, "searches",
                          std::move(work));
}

grpc::ServerUnaryReactor* SearchService::Search(grpc::CallbackServerContext* context,
                                                const v1::SearchRequest* request,
                                                v1::SearchResponse* response) {
  return Run(context, [this, request, response](absl::Time deadline) {
    absl::StatusOr<v1::SearchResponse> r = options_.queries->Search(*request, deadline);
    if (!r.ok()) return r.status();
    *response = *std::move(r);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* SearchService::Get(grpc::CallbackServerContext* context,
                                             const v1::GetRequest* request,
                                             v1::GetResponse* response) {
  return Run(context, [this, request, response](absl::Time deadline) {
    absl::StatusOr<v1::GetResponse> r = options_.queries->Get(*request, deadline);
    if (!r.ok()) return r.status();
    *response = *std::move(r);
    return absl::OkStatus();
  });
}

}  // namespace kf::rpc
