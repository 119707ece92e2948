#include "common/testing/test_certs.h"

#include <cstdio>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace kf::testing {
namespace {

// Runs `command` in a shell; INTERNAL with its output unless it exits 0.
absl::Status Run(const std::string& command) {
  std::FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return absl::InternalError("popen failed: " + command);
  std::string output;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) output.append(buf, n);
  if (pclose(p) != 0) return absl::InternalError(absl::StrCat(command, ":\n", output));
  return absl::OkStatus();
}

constexpr char kKey[] = "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes";

absl::Status MakeCa(const std::string& dir, const std::string& name) {
  return Run(absl::StrCat("openssl req -x509 ", kKey, " -days 2 -subj /CN=", name, " -keyout ", dir,
                          "/", name, ".key -out ", dir, "/", name,
                          ".pem -addext basicConstraints=critical,CA:TRUE -addext "
                          "keyUsage=critical,keyCertSign,cRLSign"));
}

// A leaf `name` signed by CA `ca`, with the extensions of `ext` (an openssl extfile line).
absl::Status MakeLeaf(const std::string& dir, const std::string& ca, const std::string& name,
                      const std::string& ext) {
  const std::string base = dir + "/" + name;
  std::ofstream(base + ".ext") << ext << "\n";
  if (absl::Status s = Run(absl::StrCat("openssl req ", kKey, " -subj /CN=", name, " -keyout ",
                                        base, ".key -out ", base, ".csr"));
      !s.ok()) {
    return s;
  }
  return Run(absl::StrCat("openssl x509 -req -in ", base, ".csr -CA ", dir, "/", ca, ".pem -CAkey ",
                          dir, "/", ca, ".key -CAcreateserial -days 2 -extfile ", base,
                          ".ext -out ", base, ".pem"));
}

}  // namespace

absl::StatusOr<TestCerts> MakeTestCerts(const std::string& dir) {
  for (absl::Status s : {MakeCa(dir, "ca"), MakeCa(dir, "other-ca"),
                         MakeLeaf(dir, "ca", "server",
                                  "subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                  "extendedKeyUsage=serverAuth,clientAuth"),
                         MakeLeaf(dir, "ca", "client", "extendedKeyUsage=clientAuth")}) {
    if (!s.ok()) return s;
  }
  return TestCerts{.ca = dir + "/ca.pem",
                   .server_cert = dir + "/server.pem",
                   .server_key = dir + "/server.key",
                   .client_cert = dir + "/client.pem",
                   .client_key = dir + "/client.key",
                   .other_ca = dir + "/other-ca.pem"};
}

}  // namespace kf::testing
