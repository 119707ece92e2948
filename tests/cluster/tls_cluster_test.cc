// A cluster over mutual TLS (docs/security.md): etcd, the coordinator, three nodes and three
// logstores (the quorum backend) each present the test server certificate and require a
// client certificate signed by the test CA, so every connection between them is TLS with the
// dialer's own certificate: each process's calls to etcd, a node's timestamp fetches from the
// coordinator, its appends to the logstores, the coordinator's DDL broadcast to the nodes, and
// the client's calls to all.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cluster_fixture.h"
#include "common/testing/test_certs.h"

namespace kf::cluster_testing {
namespace {

class TlsClusterTest : public ClusterTest {
 protected:
  void SetUp() override {
    absl::StatusOr<kf::testing::TestCerts> certs = kf::testing::MakeTestCerts(certs_dir_.path());
    ASSERT_TRUE(certs.ok()) << certs.status();
    certs_ = *certs;
    ClusterTest::SetUp();
  }
  std::string WalBackend() const override { return "quorum"; }
  std::vector<std::string> ServerTlsArgs() const override {
    return {"--tls-cert-file",      certs_.server_cert, "--tls-key-file",   certs_.server_key,
            "--tls-client-ca-file", certs_.ca,          "--tls-ca-file",    certs_.ca,
            "--etcd-ca-file",       certs_.ca,          "--etcd-cert-file", certs_.client_cert,
            "--etcd-key-file",      certs_.client_key};
  }
  std::optional<kf::meta::testing::EtcdProcess::Tls> EtcdTls() const override {
    return kf::meta::testing::EtcdProcess::Tls{.cert_file = certs_.server_cert,
                                               .key_file = certs_.server_key,
                                               .client_ca_file = certs_.ca};
  }
  kingfisher::TlsOptions ClientTls() const override {
    return {.enabled = true,
            .ca_file = certs_.ca,
            .cert_file = certs_.client_cert,
            .key_file = certs_.client_key};
  }

  kf::testing::TempDir certs_dir_;
  kf::testing::TestCerts certs_;
};

TEST_F(TlsClusterTest, EveryConnectionIsMutualTls) {
  // SetUp waited until the coordinator assigned every pchannel (through etcd). Appends need
  // timeticks from the coordinator and a quorum of logstores.
  auto producer = client_->CreateProducer();
  ASSERT_TRUE(producer.ok()) << producer.status();
  for (int p = 0; p < kPChannels; ++p) {
    kingfisher::Message m;
    m.type = kingfisher::MessageType::kInsert;
    m.vchannel = VChannel(p);
    m.payload = "tls-" + std::to_string(p);
    absl::StatusOr<kingfisher::AppendResult> ack = (*producer)->Append(std::move(m)).get();
    ASSERT_TRUE(ack.ok()) << ack.status();
  }
  for (int p = 0; p < kPChannels; ++p) {
    std::vector<kingfisher::ConsumedMessage> got = ReadAll(VChannel(p), 1);
    ASSERT_EQ(got.size(), 1u) << VChannel(p);
    EXPECT_EQ(got[0].payload, "tls-" + std::to_string(p));
  }
  // The coordinator broadcasts the DDL to the nodes that own the collection's pchannels.
  auto created = client_->CreateCollection({.name = "over_tls", .dim = 4, .shards = 3});
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->state, "CREATED");

  // A client without a certificate is refused.
  kingfisher::ClientOptions anonymous;
  anonymous.endpoint = coord_->address();
  anonymous.tls = {.enabled = true, .ca_file = certs_.ca};
  anonymous.status_timeout = std::chrono::seconds(3);
  auto client = kingfisher::Client::Connect(anonymous);
  ASSERT_TRUE(client.ok()) << client.status();
  EXPECT_FALSE((*client)->GetStatus().ok());
}

}  // namespace
}  // namespace kf::cluster_testing
