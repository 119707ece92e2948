// RpcServer: the gRPC server of a kingfisher process, so that binaries in src/server never
// include gRPC headers. The caller chooses the services:
//   - StreamingNode (Produce/Consume) when RpcServerOptions::wal_registry is set (standalone,
//     streaming node);
//   - StreamingCoord always, from RpcServerOptions::coord (the coordinator: view + oracle; a
//     node: its view, no oracle; standalone today: the registry's single-node status);
//   - Collections when RpcServerOptions::collections.ddl is set (coordinator, standalone);
//     elsewhere clients get UNIMPLEMENTED;
//   - Search when RpcServerOptions::search.queries is set (standalone, streaming node);
//   - Replicate with StreamingNode, ReplicateAdmin with Collections (replicate_service.h).
//
// Thread-safety: Shutdown may be called from any thread, once. Ownership: borrows the registry,
// view, oracle and DDL host, which must outlive the server. Errors: Start fails with UNAVAILABLE
// when the address cannot be bound, INVALID_ARGUMENT for a malformed address.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/security/server_credentials.h"
#include "rpc/collection_service_options.h"
#include "rpc/coord_service_options.h"
#include "rpc/node_options.h"
#include "rpc/replicate_service_options.h"
#include "rpc/search_service_options.h"
#include "streaming/node/wal_registry.h"

namespace grpc {
class Server;
}

namespace kf::rpc {

using streaming::node::WalRegistry;

class StreamingNodeService;
class CoordService;
class CollectionService;
class SearchService;
class ReplicateService;
class ReplicateAdminService;
class CompletionLoop;

struct RpcServerOptions {
  std::string listen = "127.0.0.1:19530";  // HOST:PORT; port 0 picks a free port
  // What the listener presents (wire/credentials.h); null: plaintext.
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // gRPC send/receive limit; must exceed the largest payload plus message overhead.
  size_t max_message_bytes = (64u << 20) + (4u << 20);
  // The StreamingNode service is served over this registry; null = not served.
  const WalRegistry* wal_registry = nullptr;
  StreamingNodeOptions node;
  // The StreamingCoord service (always served).
  CoordServiceOptions coord;
  // The Collections service; served when `collections.ddl` is set.
  CollectionServiceOptions collections;
  // The Search service; served when `search.queries` is set.
  SearchServiceOptions search;
  // The Replicate service (served with StreamingNode).
  ReplicateServiceOptions replicate;
};

class RpcServer {
 public:
  static absl::StatusOr<std::unique_ptr<RpcServer>> Start(RpcServerOptions options);
  ~RpcServer();

  // HOST:PORT actually bound.
  const std::string& address() const { return address_; }

  // Graceful: new streams/appends/collection calls fail with ON_SHUTDOWN; collection calls in
  // flight finish first (appends are still served for their broadcasts), then in-flight
  // appends finish and their acks are written, watch streams end; after `grace` the remaining
  // calls are cancelled (collection calls: the DDL host is stopped, they end UNAVAILABLE).
  // Returns when every call has finished (then the Wals may be closed).
  void Shutdown(absl::Duration grace);

 private:
  RpcServer() = default;

  std::string address_;
  std::unique_ptr<StreamingNodeService> node_service_;  // null when not served
  std::unique_ptr<CoordService> coord_service_;
  std::unique_ptr<CollectionService> collection_service_;           // null when not served
  std::unique_ptr<SearchService> search_service_;                   // null when not served
  std::unique_ptr<ReplicateService> replicate_service_;             // with node_service_
  std::unique_ptr<ReplicateAdminService> replicate_admin_service_;  // with collection_service_
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<CompletionLoop> loop_;  // serves every call; set once the server started
  bool shut_down_ = false;
};

// Splits "HOST:PORT" (IPv6 as "[::1]:PORT"). INVALID_ARGUMENT when malformed.
absl::Status SplitHostPort(const std::string& address, std::string* host, int* port);

}  // namespace kf::rpc
