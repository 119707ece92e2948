#include "rpc/rpc_server.h"

#include <climits>
#include <string>
#include <utility>

#include "absl/strings/numbers.h"
#include "common/absl_compat.h"
#include "common/listen_error.h"
#include "grpcpp/grpcpp.h"
#include "rpc/collection_service.h"
#include "rpc/completion_loop.h"
#include "rpc/coord_service.h"
#include "rpc/replicate_service.h"
#include "rpc/search_service.h"
#include "rpc/streaming_node_service.h"
#include "wire/credentials.h"

namespace kf::rpc {

absl::Status SplitHostPort(const std::string& address, std::string* host, int* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return absl::InvalidArgumentError("address '" + address + "' is not HOST:PORT");
  }
  *host = address.substr(0, colon);
  if (!absl::SimpleAtoi(ToAbsl(std::string_view(address).substr(colon + 1)), port) || *port < 0 ||
      *port > 65535) {
    return absl::InvalidArgumentError("address '" + address + "' has no valid port");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RpcServer>> RpcServer::Start(RpcServerOptions options) {
  std::string host;
  int port = 0;
  if (absl::Status s = SplitHostPort(options.listen, &host, &port); !s.ok()) return s;

  std::unique_ptr<RpcServer> server(new RpcServer());
  const int max_bytes = options.max_message_bytes > static_cast<size_t>(INT_MAX)
                            ? INT_MAX
                            : static_cast<int>(options.max_message_bytes);
  grpc::ServerBuilder builder;
  int selected_port = 0;
  builder.AddListeningPort(options.listen, wire::OrPlaintext(options.credentials), &selected_port);
  // A port held by another server is an error, not a port to share (common/listen_error.h).
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(max_bytes);
  builder.SetMaxSendMessageSize(max_bytes);
  if (options.wal_registry != nullptr) {
    server->node_service_ =
        std::make_unique<StreamingNodeService>(options.wal_registry, options.node);
    builder.RegisterService(server->node_service_.get());
    server->replicate_service_ =
        std::make_unique<ReplicateService>(options.wal_registry, options.replicate);
    builder.RegisterService(server->replicate_service_.get());
  }
  server->coord_service_ = std::make_unique<CoordService>(options.coord);
  if (options.collections.ddl != nullptr) {
    server->collection_service_ = std::make_unique<CollectionService>(options.collections);
    builder.RegisterService(server->collection_service_.get());
    server->replicate_admin_service_ = std::make_unique<ReplicateAdminService>(options.collections);
    builder.RegisterService(server->replicate_admin_service_.get());
  }
  if (options.search.queries != nullptr) {
    server->search_service_ = std::make_unique<SearchService>(options.search);
    builder.RegisterService(server->search_service_.get());
  }

  builder.RegisterService(server->coord_service_.get());
  std::unique_ptr<grpc::ServerCompletionQueue> cq = builder.AddCompletionQueue();
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || selected_port == 0) return ListenError("grpc", host, port);
  server->address_ = host + ":" + std::to_string(selected_port);
  server->loop_ = std::make_unique<CompletionLoop>(std::move(cq));
  CompletionLoop* loop = server->loop_.get();
  if (server->node_service_ != nullptr) {
    server->node_service_->Serve(loop);
    server->replicate_service_->Serve(loop);
  }
  if (server->collection_service_ != nullptr) {
    server->collection_service_->Serve(loop);
    server->replicate_admin_service_->Serve(loop);
  }
  if (server->search_service_ != nullptr) server->search_service_->Serve(loop);
  server->coord_service_->Serve(loop);
  return server;
}

RpcServer::~RpcServer() {
  if (!shut_down_ && server_ != nullptr) Shutdown(absl::ZeroDuration());
}

void RpcServer::Shutdown(absl::Duration grace) {
  if (shut_down_) return;
  shut_down_ = true;
  const absl::Time deadline = absl::Now() + grace;
  // DDL first, while the appends of its broadcasts are still served (standalone).
  if (collection_service_ != nullptr) {
    collection_service_->BeginShutdown();
    replicate_admin_service_->BeginShutdown();
    collection_service_->WaitForCalls(deadline);
    replicate_admin_service_->WaitForCalls(deadline);
  }
  if (search_service_ != nullptr) {
    search_service_->BeginShutdown();
    search_service_->WaitForCalls(deadline);
  }
  if (replicate_service_ != nullptr) {
    replicate_service_->BeginShutdown();
    replicate_service_->WaitForCalls(deadline);
  }
  if (node_service_ != nullptr) node_service_->BeginShutdown();
  coord_service_->BeginShutdown();
  // Wait for our own streams (in-flight appends acked) rather than inside grpc::Server::Shutdown:
  // that one also waits for idle client connections to go away, which can take until the
  // deadline when a client is not polling its channel.
  if (node_service_ != nullptr) node_service_->WaitForStreams(deadline);
  coord_service_->WaitForStreams(deadline);
  server_->Shutdown(absl::ToChronoTime(absl::Now()));  // cancels whatever is left
  server_->Wait();
  loop_->ShutdownAndJoin();  // every call is over (gRPC's order: the server, then its queue)
}

}  // namespace kf::rpc
