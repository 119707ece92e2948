#include "wire/credentials.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kf::wire {
namespace {

// The PEM text of `path`, named `setting` in errors.
absl::StatusOr<std::string> ReadPem(const std::string& setting, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(setting, " ", path, ": cannot be read"));
  std::ostringstream text;
  text << in.rdbuf();
  if (!absl::StrContains(text.str(), "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(setting, " ", path, ": not PEM (no -----BEGIN line)"));
  }
  return text.str();
}

// Both files of a key pair or neither.
absl::Status ReadKeyPair(const std::string& cert_setting, const std::string& cert_file,
                         const std::string& key_setting, const std::string& key_file,
                         std::string* cert, std::string* key) {
  if (cert_file.empty() != key_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(cert_setting, " and ", key_setting, " go together: set both or neither"));
  }
  if (cert_file.empty()) return absl::OkStatus();
  absl::StatusOr<std::string> c = ReadPem(cert_setting, cert_file);
  if (!c.ok()) return c.status();
  absl::StatusOr<std::string> k = ReadPem(key_setting, key_file);
  if (!k.ok()) return k.status();
  *cert = *std::move(c);
  *key = *std::move(k);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ChannelCredentials(
    const kingfisher::TlsOptions& tls, const std::string& setting) {
  if (!tls.enabled) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  if (!tls.ca_file.empty()) {
    absl::StatusOr<std::string> roots = ReadPem(absl::StrCat(setting, "ca_file"), tls.ca_file);
    if (!roots.ok()) return roots.status();
    ssl.pem_root_certs = *std::move(roots);
  }
  if (absl::Status s = ReadKeyPair(absl::StrCat(setting, "cert_file"), tls.cert_file,
                                   absl::StrCat(setting, "key_file"), tls.key_file,
                                   &ssl.pem_cert_chain, &ssl.pem_private_key);
      !s.ok()) {
    return s;
  }
  return grpc::SslCredentials(ssl);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentials(const ServerTls& tls) {
  if (tls.cert_file.empty() && tls.key_file.empty()) {
    if (!tls.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "tls_client_ca_file needs tls_cert_file and tls_key_file: client certificates are "
          "checked only over TLS");
    }
    return grpc::InsecureServerCredentials();
  }
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  if (absl::Status s = ReadKeyPair("tls_cert_file", tls.cert_file, "tls_key_file", tls.key_file,
                                   &pair.cert_chain, &pair.private_key);
      !s.ok()) {
    return s;
  }
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (!tls.client_ca_file.empty()) {
    absl::StatusOr<std::string> roots = ReadPem("tls_client_ca_file", tls.client_ca_file);
    if (!roots.ok()) return roots.status();
    ssl.pem_root_certs = *std::move(roots);
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  return grpc::SslServerCredentials(ssl);
}

std::shared_ptr<grpc::ChannelCredentials> OrPlaintext(
    std::shared_ptr<grpc::ChannelCredentials> credentials) {
  return credentials != nullptr ? std::move(credentials) : grpc::InsecureChannelCredentials();
}

std::shared_ptr<grpc::ServerCredentials> OrPlaintext(
    std::shared_ptr<grpc::ServerCredentials> credentials) {
  return credentials != nullptr ? std::move(credentials) : grpc::InsecureServerCredentials();
}

}  // namespace kf::wire
