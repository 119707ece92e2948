// TLS on the gRPC listener of `kingfisher run standalone` (docs/security.md), end to end: the
// client library and kfctl over TLS, what a client that does not trust the server or brings no
// certificate gets, and the server's start with bad TLS settings. The certificates are made
// by `openssl` for each test (common/testing/test_certs.h).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/testing/test_certs.h"
#include "kfctl_runner.h"
#include "kingfisher/client.h"
#include "server_process.h"

namespace kf::testing {
namespace {

using kingfisher::TlsOptions;

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<TestCerts> certs = MakeTestCerts(tmp_.path());
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = *certs;
  }

  // A standalone server presenting the test server certificate and trusting the test CA when
  // it dials (its own listener, for DDL), plus `extra_args`.
  std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> extra_args = {}) {
    std::vector<std::string> args = {"--tls-cert-file", certs_.server_cert, "--tls-key-file",
                                     certs_.server_key, "--tls-ca-file",    certs_.ca};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    auto server = std::make_unique<ServerProcess>(
        ServerProcess::Options{.data_dir = tmp_.path() + "/data", .extra_args = args});
    if (!server->Start()) {
      ADD_FAILURE() << "server did not start:\n" << server->Output();
      return nullptr;
    }
    return server;
  }

  // A client of `address` with `tls` and deadlines short enough for a refused handshake.
  static std::unique_ptr<kingfisher::Client> Connect(const std::string& address, TlsOptions tls) {
    kingfisher::ClientOptions o;
    o.endpoint = address;
    o.tls = std::move(tls);
    o.status_timeout = std::chrono::seconds(3);
    o.attempt_timeout = std::chrono::seconds(3);
    o.append_timeout = std::chrono::seconds(10);
    auto client = kingfisher::Client::Connect(std::move(o));
    EXPECT_TRUE(client.ok()) << client.status();
    return client.ok() ? *std::move(client) : nullptr;
  }

  TlsOptions Trusting(const std::string& ca) const { return {.enabled = true, .ca_file = ca}; }

  TempDir tmp_;
  TestCerts certs_;
};

// One append read back, through `client`.
void AppendAndReadBack(kingfisher::Client* client, const std::string& vchannel) {
  auto producer = client->CreateProducer();
  ASSERT_TRUE(producer.ok()) << producer.status();
  kingfisher::Message m;
  m.type = kingfisher::MessageType::kInsert;
  m.vchannel = vchannel;
  m.payload = "over tls";
  absl::StatusOr<kingfisher::AppendResult> ack = (*producer)->Append(std::move(m)).get();
  ASSERT_TRUE(ack.ok()) << ack.status();
  auto consumer =
      client->CreateConsumer({.vchannel = vchannel, .policy = kingfisher::DeliverPolicy::All()});
  ASSERT_TRUE(consumer.ok()) << consumer.status();
  auto got = (*consumer)->Next(kingfisher::Clock::now() + std::chrono::seconds(20));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->payload, "over tls");
}

TEST_F(TlsTest, ServesTlsToClientsThatTrustItAndNothingElse) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);

  auto trusting = Connect(server->address(), Trusting(certs_.ca));
  ASSERT_NE(trusting, nullptr);
  AppendAndReadBack(trusting.get(), "kf-dml_0_tls");
  // A collection's DDL is broadcast by the server through a client of its own listener.
  auto created = trusting->CreateCollection({.name = "over_tls", .dim = 4});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->state, "CREATED");

  // Plaintext, and TLS trusting another CA: no connection, a clear code, nothing hangs.
  for (const TlsOptions& tls : {TlsOptions{}, Trusting(certs_.other_ca)}) {
    auto client = Connect(server->address(), tls);
    ASSERT_NE(client, nullptr);
    absl::StatusOr<kingfisher::ClusterStatus> status = client->GetStatus();
    EXPECT_FALSE(status.ok()) << "tls " << tls.enabled << " ca '" << tls.ca_file << "'";
    EXPECT_TRUE(absl::IsUnavailable(status.status()) || absl::IsDeadlineExceeded(status.status()))
        << status.status();
  }

  // kfctl: --tls-ca, and without it.
  KfctlResult ok = RunKfctl(tmp_.path(), {"--endpoint", server->address(), "--tls-ca", certs_.ca,
                                          "--timeout", "5", "status"});
  ASSERT_EQ(ok.exit_code, 0) << Describe(ok);
  ASSERT_FALSE(ok.lines.empty()) << Describe(ok);
  EXPECT_TRUE(ok.lines[0].contains("pchannels")) << Describe(ok);
  KfctlResult plain =
      RunKfctl(tmp_.path(), {"--endpoint", server->address(), "--timeout", "3", "status"});
  EXPECT_NE(plain.exit_code, 0) << Describe(plain);
}

TEST_F(TlsTest, RequiresAClientCertificateWhenConfigured) {
  auto server = StartServer({"--tls-client-ca-file", certs_.ca});
  ASSERT_NE(server, nullptr);

  auto anonymous = Connect(server->address(), Trusting(certs_.ca));
  ASSERT_NE(anonymous, nullptr);
  EXPECT_FALSE(anonymous->GetStatus().ok());

  TlsOptions mutual = Trusting(certs_.ca);
  mutual.cert_file = certs_.client_cert;
  mutual.key_file = certs_.client_key;
  auto client = Connect(server->address(), mutual);
  ASSERT_NE(client, nullptr);
  AppendAndReadBack(client.get(), "kf-dml_1_mtls");
  // The server dials its own listener (DDL) with its own certificate.
  auto created = client->CreateCollection({.name = "over_mtls", .dim = 4});
  ASSERT_TRUE(created.ok()) << created.status();

  KfctlResult ok =
      RunKfctl(tmp_.path(), {"--endpoint", server->address(), "--tls-ca", certs_.ca, "--tls-cert",
                             certs_.client_cert, "--tls-key", certs_.client_key, "status"});
  EXPECT_EQ(ok.exit_code, 0) << Describe(ok);
}

TEST_F(TlsTest, BadTlsSettingsStopTheServerAtStartNamingTheFile) {
  const std::vector<std::string> base = {
      "run",      "standalone",  "--data-dir",    tmp_.path() + "/d",
      "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"};
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    return RunKingfisher(args);
  };
  const std::string missing = tmp_.path() + "/no-such.pem";
  ProcessResult r = run({"--tls-cert-file", missing, "--tls-key-file", certs_.server_key});
  ASSERT_TRUE(r.exited);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find(missing), std::string::npos) << r.output;

  // A key that is not PEM.
  r = run({"--tls-cert-file", certs_.server_cert, "--tls-key-file", tmp_.path() + "/server.ext"});
  ASSERT_TRUE(r.exited);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("not PEM"), std::string::npos) << r.output;

  r = run({"--tls-cert-file", certs_.server_cert});
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("go together"), std::string::npos) << r.output;

  // kfctl: half a key pair is a usage error.
  KfctlResult half = RunKfctl(tmp_.path(), {"--tls-cert", certs_.client_cert, "status"});
  EXPECT_EQ(half.exit_code, 2) << Describe(half);
  EXPECT_NE(half.err.find("--tls-cert and --tls-key go together"), std::string::npos)
      << Describe(half);
}

}  // namespace
}  // namespace kf::testing
