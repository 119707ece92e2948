#include "rpc/search_service.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "wire/status_convert.h"

namespace kf::rpc {

namespace v1 = kingfisher::v1;

SearchService::~SearchService() {
  BeginShutdown();
  WaitForCalls(absl::InfiniteFuture());
}

template <typename Work>
grpc::ServerUnaryReactor* SearchService::Run(grpc::CallbackServerContext* context, Work work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  const auto cap =
      std::chrono::system_clock::now() + absl::ToChronoNanoseconds(options_.max_call_timeout);
  const absl::Time deadline = absl::FromChrono(std::min(context->deadline(), cap));
  // The request and response stay valid until Finish.
  const CallWorkers::Spawn spawned = workers_.TrySpawn(
      [reactor, deadline, work = std::move(work)]() mutable -> CallWorkers::Reply {
        const grpc::Status status = wire::ToGrpcStatus(work(deadline));
        return [reactor, status] { reactor->Finish(status); };
      });
  if (spawned != CallWorkers::Spawn::kStarted) {
    reactor->Finish(wire::ToGrpcStatus(workers_.Refusal(spawned, "searches")));
  }
  return reactor;
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
