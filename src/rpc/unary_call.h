// RunUnaryOnWorker: how the unary services (Search, Collections, Replicate, ReplicateAdmin) run
// a call: `work(deadline)` on one of `workers` (never on the CompletionLoop, since it may wait),
// with the call's deadline capped at `max_call_timeout`, finishing the call with the status it
// returns; a call the workers refuse (full, closed) is answered with their refusal for `what`
// ("searches", "collection calls", ...). The request and response the work captures stay valid
// until it finishes the call.
//
// Thread-safety: as CallWorkers. Ownership: borrows `workers` and the call's context.
#pragma once

#include <algorithm>
#include <chrono>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/server_context.h"
#include "rpc/async_unary.h"
#include "rpc/call_workers.h"
#include "wire/status_convert.h"

namespace kf::rpc {

template <typename Work>  // absl::Status(absl::Time deadline)
void RunUnaryOnWorker(CallWorkers& workers, absl::Duration max_call_timeout,
                      grpc::ServerContext* context, UnaryReactor* reactor, std::string_view what,
                      Work work) {
  const auto cap = std::chrono::system_clock::now() + absl::ToChronoNanoseconds(max_call_timeout);
  const absl::Time deadline = absl::FromChrono(std::min(context->deadline(), cap));
  const CallWorkers::Spawn spawned =
      workers.TrySpawn([reactor, deadline, work = std::move(work)]() mutable -> CallWorkers::Reply {
        const grpc::Status status = wire::ToGrpcStatus(work(deadline));
        return [reactor, status] { reactor->Finish(status); };
      });
  if (spawned != CallWorkers::Spawn::kStarted) {
    reactor->Finish(wire::ToGrpcStatus(workers.Refusal(spawned, what)));
  }
}

}  // namespace kf::rpc
