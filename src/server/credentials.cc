#include "server/credentials.h"

#include <algorithm>
#include <string>
#include <utility>

#include "spdlog/spdlog.h"
#include "wire/credentials.h"

namespace kf::server {

absl::StatusOr<ServerCredentialSet> LoadCredentials(const ServerConfig& config) {
  ServerCredentialSet out;
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> listener =
      wire::ServerCredentials(wire::ServerTls{.cert_file = config.tls_cert_file,
                                              .key_file = config.tls_key_file,
                                              .client_ca_file = config.tls_client_ca_file});
  if (!listener.ok()) return listener.status();
  out.listener = *std::move(listener);
  if (!config.tls_cert_file.empty()) {
    if (config.tls_ca_file.empty()) {
      spdlog::warn(
          "tls_ca_file is not set: the servers this one dials (other roles, logstores, a "
          "replication secondary, and its own listener for DDL) are verified with the system's "
          "CA certificates; if {} is signed by a private CA, set tls_ca_file to that CA",
          config.tls_cert_file);
    }
    out.peer_tls = kingfisher::TlsOptions{.enabled = true,
                                          .ca_file = config.tls_ca_file,
                                          .cert_file = config.tls_cert_file,
                                          .key_file = config.tls_key_file};
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> peers =
      wire::ChannelCredentials(out.peer_tls);
  if (!peers.ok()) return peers.status();
  out.peers = *std::move(peers);
  return out;
}

absl::StatusOr<meta::EtcdMetaStore::Options> EtcdOptions(const ServerConfig& config) {
  meta::EtcdMetaStore::Options options;
  options.endpoints = meta::EtcdMetaStore::ParseEndpoints(config.etcd);
  // Credentials only for https:// endpoints (the system's roots are then loaded when no
  // etcd_ca_file is set); the files are read anyway, so a bad one is an error either way.
  const bool https = std::any_of(options.endpoints.begin(), options.endpoints.end(),
                                 [](const std::string& e) { return e.rfind("https://", 0) == 0; });
  if (!https && config.etcd_ca_file.empty() && config.etcd_cert_file.empty()) return options;
  const kingfisher::TlsOptions tls{.enabled = true,
                                   .ca_file = config.etcd_ca_file,
                                   .cert_file = config.etcd_cert_file,
                                   .key_file = config.etcd_key_file};
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      wire::ChannelCredentials(tls, "etcd_");
  if (!credentials.ok()) return credentials.status();
  options.tls_credentials = *std::move(credentials);
  return options;
}

}  // namespace kf::server
