// The credentials of a `kingfisher run <role>` process, from its tls_* and etcd_* settings
// (docs/security.md): what its gRPC listener presents, what it dials the other Kingfisher
// servers with (coordinator, nodes, logstores, a replication secondary, and a standalone
// server's own listener, which its DDL broadcaster appends through), and what it dials etcd
// with.
//
// Errors: those of wire/credentials.h, for a file that cannot be read or holds no PEM.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "kingfisher/client.h"
#include "server/config.h"
#include "storage/meta/etcd_meta_store.h"

namespace kf::server {

struct ServerCredentialSet {
  std::shared_ptr<grpc::ServerCredentials> listener;
  // TLS on with the process's own certificate as the client's, verified against tls_ca_file,
  // when the listener serves TLS (a cluster's servers are all TLS or all plaintext); off
  // otherwise.
  kingfisher::TlsOptions peer_tls;
  std::shared_ptr<grpc::ChannelCredentials> peers;  // made from peer_tls
};

absl::StatusOr<ServerCredentialSet> LoadCredentials(const ServerConfig& config);

// The metadata store's options: `etcd`'s endpoints, its https ones dialed with etcd_ca_file,
// etcd_cert_file and etcd_key_file.
absl::StatusOr<meta::EtcdMetaStore::Options> EtcdOptions(const ServerConfig& config);

}  // namespace kf::server
