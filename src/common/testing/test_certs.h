// TestCerts: a throwaway PKI for the TLS tests, made with the `openssl` command in a directory:
// a CA, a server certificate it signs for 127.0.0.1 and localhost (usable as a client
// certificate too, as a cluster's servers use theirs), a client certificate it signs, and a
// second CA that signs nothing of these.
#pragma once

#include <string>

#include "absl/status/statusor.h"

namespace kf::testing {

struct TestCerts {
  std::string ca;  // PEM files
  std::string server_cert, server_key;
  std::string client_cert, client_key;
  std::string other_ca;
};

// Files under `dir`. INTERNAL with openssl's output when a command fails.
absl::StatusOr<TestCerts> MakeTestCerts(const std::string& dir);

}  // namespace kf::testing
