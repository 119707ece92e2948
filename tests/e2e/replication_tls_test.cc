// Replication between two standalone servers over mutual TLS (docs/security.md,
// docs/replication.md): `kfctl replicate configure` with a client certificate, and the primary's
// replicator dialing the secondary with its own server certificate.
#include <filesystem>
#include <string>
#include <vector>

#include "common/testing/temp_dir.h"
#include "common/testing/test_certs.h"
#include "gtest/gtest.h"
#include "kfctl_runner.h"
#include "kingfisher/client.h"
#include "server_process.h"

namespace kf {
namespace {

using testing::ServerProcess;

TEST(ReplicationTls, ASecondaryReachedOverMutualTlsGetsEveryMessageInOrder) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.path() + "/certs");
  absl::StatusOr<testing::TestCerts> certs = testing::MakeTestCerts(dir.path() + "/certs");
  ASSERT_TRUE(certs.ok()) << certs.status();
  const std::vector<std::string> tls = {
      "--tls-cert-file",      certs->server_cert, "--tls-key-file", certs->server_key,
      "--tls-client-ca-file", certs->ca,          "--tls-ca-file",  certs->ca};
  auto server = [&](const std::string& cluster) {
    std::vector<std::string> args = {"--cluster", cluster, "--pchannels", "2"};
    args.insert(args.end(), tls.begin(), tls.end());
    return ServerProcess({.data_dir = dir.path() + "/" + cluster, .extra_args = args});
  };
  ServerProcess north = server("north");
  ServerProcess south = server("south");
  ASSERT_TRUE(north.Start()) << north.Output();
  ASSERT_TRUE(south.Start()) << south.Output();

  const std::vector<std::string> kfctl_tls = {"--tls-ca",         certs->ca,   "--tls-cert",
                                              certs->client_cert, "--tls-key", certs->client_key};
  std::vector<std::string> configure = {"--endpoint", north.address()};
  configure.insert(configure.end(), kfctl_tls.begin(), kfctl_tls.end());
  configure.insert(configure.end(),
                   {"replicate", "configure", "--primary", "north=" + north.address(),
                    "--secondary", "south=" + south.address()});
  testing::KfctlResult configured = testing::RunKfctl(dir.path(), configure);
  ASSERT_EQ(configured.exit_code, 0) << testing::Describe(configured);

  auto connect = [&](const ServerProcess& at) {
    kingfisher::ClientOptions o;
    o.endpoint = at.address();
    o.tls = {.enabled = true,
             .ca_file = certs->ca,
             .cert_file = certs->client_cert,
             .key_file = certs->client_key};
    return kingfisher::Client::Connect(std::move(o));
  };
  auto primary = connect(north);
  ASSERT_TRUE(primary.ok()) << primary.status();
  auto producer = (*primary)->CreateProducer();
  ASSERT_TRUE(producer.ok()) << producer.status();
  constexpr int kMessages = 20;
  for (int i = 0; i < kMessages; ++i) {
    auto ack = (*producer)
                   ->Append({.type = kingfisher::MessageType::kInsert,
                             .vchannel = "north-dml_0_tls",
                             .payload = "m" + std::to_string(i)})
                   .get();
    ASSERT_TRUE(ack.ok()) << ack.status();
  }

  auto secondary = connect(south);
  ASSERT_TRUE(secondary.ok()) << secondary.status();
  auto consumer = (*secondary)
                      ->CreateConsumer({.vchannel = "south-dml_0_tls",
                                        .policy = kingfisher::DeliverPolicy::All()});
  ASSERT_TRUE(consumer.ok()) << consumer.status();
  const auto deadline = kingfisher::Clock::now() + std::chrono::seconds(30);  // TimeTicks go on
  for (int i = 0; i < kMessages;) {
    auto m = (*consumer)->Next(deadline);
    ASSERT_TRUE(m.ok()) << "message " << i << ": " << m.status() << "\n" << north.Output();
    if (m->type == kingfisher::MessageType::kTimeTick) continue;
    EXPECT_EQ(m->payload, "m" + std::to_string(i));
    ++i;
  }
}

}  // namespace
}  // namespace kf
