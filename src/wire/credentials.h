// Credentials of the connections between Kingfisher clients and servers (docs/security.md):
// TLS when configured, plaintext otherwise. The PEM files are read when the credentials are
// made, so a missing or malformed file is an error at start, not a failed handshake later.
//
// Errors: NOT_FOUND for a file that cannot be read, INVALID_ARGUMENT for one that holds no PEM
// block or for half a key pair; each names the setting and the path.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "kingfisher/client.h"

namespace kf::wire {

// What a server presents on its gRPC listener. Empty cert_file: plaintext.
struct ServerTls {
  std::string cert_file;  // PEM certificate chain
  std::string key_file;   // PEM private key
  // Non-empty: clients must present a certificate signed by one of these CAs (mutual TLS).
  std::string client_ca_file;
};

// `setting` prefixes the names of the files in errors ("tls ca_file ...", "etcd_ca_file ...").
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    const kingfisher::TlsOptions& tls, const std::string& setting = "tls ");

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const ServerTls& tls);

// `credentials`, or plaintext when null: what an option left unset means.
std::shared_ptr<grpc::ChannelCredentials> OrPlaintext(
    std::shared_ptr<grpc::ChannelCredentials> credentials);
std::shared_ptr<grpc::ServerCredentials> OrPlaintext(
    std::shared_ptr<grpc::ServerCredentials> credentials);

}  // namespace kf::wire
