#include "rpc/streaming_node_service.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "rpc/async_stream.h"
#include "rpc/consume_stream.h"
#include "rpc/produce_stream.h"

namespace kf::rpc {

StreamingNodeService::StreamingNodeService(const WalRegistry* registry,
                                           StreamingNodeOptions options)
    : registry_(registry),
      options_(std::move(options)),
      metrics_(options_.metrics != nullptr ? *options_.metrics : metrics::DefaultRegistry()),
      pumps_(options_.tail_pump_threads > 0
                 ? options_.tail_pump_threads
                 : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())),
             "kf-tail") {}

void StreamingNodeService::Serve(CompletionLoop* loop) {
  ServeBidi(loop, this, &StreamingNodeService::RequestProduce,
            [this](grpc::ServerContext* /*context*/, ByteStreamOps* call) {
              return ProduceStream::Start(call, registry_, &options_, &tracker_, &metrics_);
            });
  ServeBidi(loop, this, &StreamingNodeService::RequestConsume,
            [this](grpc::ServerContext* context, ByteStreamOps* call) {
              return ConsumeStream::Start(call, registry_, &options_, &tracker_, &metrics_, &pumps_,
                                          context->peer());
            });
}

void StreamingNodeService::BeginShutdown() { tracker_.BeginShutdown(); }

bool StreamingNodeService::WaitForStreams(absl::Time deadline) {
  return tracker_.WaitUntilEmpty(deadline);
}

}  // namespace kf::rpc
