// etcd-only behaviour against a real etcd: an etcd crash (SIGKILL) and restart on the same
// data dir, endpoint failover, TTL rounding. The MetaStore contract itself is in
// meta_store_contract_test.cc.
#include "storage/meta/etcd_meta_store.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/testing/loopback.h"
#include "common/testing/temp_dir.h"
#include "common/testing/test_certs.h"
#include "gmock/gmock.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "storage/meta/testing/etcd_process.h"
#include "storage/meta/testing/watch_recorder.h"

namespace kf::meta {
namespace {

using ::kf::meta::testing::Describe;
using ::kf::meta::testing::EtcdProcess;
using ::kf::meta::testing::WatchRecorder;
using ::testing::ElementsAre;

absl::Time Deadline() { return absl::Now() + absl::Seconds(10); }

std::string PutEvent(const std::string& key, const std::string& value, int64_t rev) {
  return "PUT " + key + "=" + value + "@" + std::to_string(rev);
}

TEST(EtcdMetaStoreTest, ParseEndpoints) {
  EXPECT_THAT(EtcdMetaStore::ParseEndpoints("http://127.0.0.1:2379, http://10.0.0.2:2379,"),
              ElementsAre("http://127.0.0.1:2379", "http://10.0.0.2:2379"));
  EXPECT_FALSE(EtcdMetaStore::Create({}).ok());
}

// etcd serving clients over TLS and asking for client certificates (docs/security.md): a store
// with the CA and a client certificate works (watches too); one without the certificate, or
// dialing in plaintext, gets UNAVAILABLE.
TEST(EtcdMetaStoreTest, TalksToAnEtcdThatServesMutualTls) {
  ::kf::testing::TempDir dir;
  absl::StatusOr<::kf::testing::TestCerts> certs = ::kf::testing::MakeTestCerts(dir.path());
  ASSERT_TRUE(certs.ok()) << certs.status();
  EtcdProcess etcd;
  etcd.set_tls({.cert_file = certs->server_cert,
                .key_file = certs->server_key,
                .client_ca_file = certs->ca});
  ASSERT_TRUE(etcd.Start().ok()) << etcd.LogTail();
  ASSERT_EQ(etcd.endpoint().rfind("https://", 0), 0u) << etcd.endpoint();

  auto pem = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  grpc::SslCredentialsOptions ssl{.pem_root_certs = pem(certs->ca),
                                  .pem_private_key = pem(certs->client_key),
                                  .pem_cert_chain = pem(certs->client_cert)};
  auto store = EtcdMetaStore::Create(
      {.endpoints = {etcd.endpoint()}, .tls_credentials = grpc::SslCredentials(ssl)});
  ASSERT_TRUE(store.ok()) << store.status();
  WatchRecorder rec;
  auto watch = (*store)->Watch("/tls/", 0, rec.Callback(), Deadline());
  ASSERT_TRUE(watch.ok()) << watch.status();
  auto put = (*store)->Put("/tls/a", "1", Deadline());
  ASSERT_TRUE(put.ok()) << put.status();
  ASSERT_TRUE(rec.WaitForEvents(1));
  auto got = (*store)->Get("/tls/a", Deadline());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->kv.value, "1");

  const absl::Time soon = absl::Now() + absl::Seconds(3);
  ssl.pem_private_key.clear();
  ssl.pem_cert_chain.clear();
  auto anonymous = EtcdMetaStore::Create(
      {.endpoints = {etcd.endpoint()}, .tls_credentials = grpc::SslCredentials(ssl)});
  ASSERT_TRUE(anonymous.ok());
  EXPECT_TRUE(absl::IsUnavailable((*anonymous)->Get("/tls/a", soon).status()));
  const std::string plain = "http://" + etcd.endpoint().substr(std::string("https://").size());
  auto plaintext = EtcdMetaStore::Create({.endpoints = {plain}});
  ASSERT_TRUE(plaintext.ok());
  EXPECT_TRUE(absl::IsUnavailable((*plaintext)->Get("/tls/a", soon).status()));
}

// The test helper itself: a port taken between EtcdProcess picking it and etcd binding it (by a
// parallel test's connection) is not a failure of the test that wanted an etcd.
TEST(EtcdProcessTest, APortTakenBeforeTheFirstStartIsReplaced) {
  EtcdProcess etcd;
  const std::string picked = etcd.endpoint();
  const int port = std::stoi(picked.substr(picked.rfind(':') + 1));
  const int taken = kf::testing::ListenOnLoopback(port);
  ASSERT_GE(taken, 0);
  const absl::Status started = etcd.Start();
  ::close(taken);
  ASSERT_TRUE(started.ok()) << started;
  EXPECT_NE(etcd.endpoint(), picked);
  auto store = EtcdMetaStore::Create({.endpoints = {etcd.endpoint()}});
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE((*store)->Put("/p", "1", Deadline()).ok());
}

TEST(EtcdMetaStoreTest, KilledEtcdIsUnavailableThenRecoversAndWatchResumesWithoutGap) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.Start().ok());
  auto created = EtcdMetaStore::Create({.endpoints = {etcd.endpoint()},
                                        .watch_backoff_initial = absl::Milliseconds(20),
                                        .watch_backoff_max = absl::Milliseconds(200)});
  ASSERT_TRUE(created.ok());
  auto& store = *created;

  const int64_t r1 = *store->Put("/w/a", "1", Deadline());
  WatchRecorder rec;
  auto watch = store->Watch("/w/", r1 + 1, rec.Callback(), Deadline());
  ASSERT_TRUE(watch.ok()) << watch.status();
  const int64_t r2 = *store->Put("/w/b", "2", Deadline());
  ASSERT_TRUE(rec.WaitForEvents(1));

  etcd.Kill();
  const absl::Time short_deadline = absl::Now() + absl::Seconds(3);
  EXPECT_TRUE(absl::IsUnavailable(store->Put("/w/x", "lost", short_deadline).status()));
  EXPECT_TRUE(absl::IsUnavailable(store->Get("/w/a", short_deadline).status()));
  EXPECT_TRUE(absl::IsUnavailable(store->GrantLease(absl::Seconds(5), short_deadline).status()));
  EXPECT_LT(absl::Now(), short_deadline);  // failed fast, not at the deadline

  ASSERT_TRUE(etcd.Start().ok()) << etcd.LogTail();
  // Reads are safe to repeat: poll one until the client has reconnected.
  const absl::Time ready_by = absl::Now() + absl::Seconds(15);
  absl::StatusOr<GetResult> a;
  do {
    a = store->Get("/w/a", Deadline());
    if (!a.ok()) absl::SleepFor(absl::Milliseconds(20));  // pacing of a condition poll
  } while (!a.ok() && absl::Now() < ready_by);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->kv.value, "1");
  EXPECT_EQ(a->revision, r2);  // nothing was lost or applied while etcd was down

  // Written while the watch is (likely) still reconnecting, and after.
  const int64_t r3 = *store->Put("/w/c", "3", Deadline());
  const int64_t r4 = *store->Put("/w/d", "4", Deadline());
  ASSERT_TRUE(rec.WaitForEvents(3));
  const int64_t r5 = *store->Put("/w/e", "5", Deadline());
  ASSERT_TRUE(rec.WaitForEvents(4));
  EXPECT_THAT(Describe(rec.events()),
              ElementsAre(PutEvent("/w/b", "2", r2), PutEvent("/w/c", "3", r3),
                          PutEvent("/w/d", "4", r4), PutEvent("/w/e", "5", r5)));
  EXPECT_TRUE(rec.error().ok()) << rec.error();
}

TEST(EtcdMetaStoreTest, FailsOverToTheNextEndpoint) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.Start().ok());
  EtcdProcess never_started;  // its client port has no listener
  auto created = EtcdMetaStore::Create({.endpoints = {never_started.endpoint(), etcd.endpoint()}});
  ASSERT_TRUE(created.ok());
  auto& store = *created;
  // A read is retried on the next endpoint within the same call.
  EXPECT_TRUE(absl::IsNotFound(store->Get("/f/missing", Deadline()).status()));
  EXPECT_EQ("http://" + store->current_endpoint(), etcd.endpoint());
  EXPECT_TRUE(store->Put("/f/k", "v", Deadline()).ok());

  // A mutation is not retried (it might have been applied), but the next call goes elsewhere.
  auto other = EtcdMetaStore::Create({.endpoints = {never_started.endpoint(), etcd.endpoint()}});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(absl::IsUnavailable((*other)->Put("/f/k", "w", Deadline()).status()));
  EXPECT_TRUE((*other)->Put("/f/k", "w", Deadline()).ok());
}

TEST(EtcdMetaStoreTest, LeaseTtlIsRoundedUpToWholeSeconds) {
  EtcdProcess etcd;
  ASSERT_TRUE(etcd.Start().ok());
  auto store = EtcdMetaStore::Create({.endpoints = {etcd.endpoint()}});
  ASSERT_TRUE(store.ok());
  auto lease = (*store)->GrantLease(absl::Milliseconds(300), Deadline());
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(lease->ttl, absl::Seconds(1));
  auto ttl = (*store)->KeepAliveOnce(lease->id, Deadline());
  ASSERT_TRUE(ttl.ok()) << ttl.status();
  EXPECT_EQ(*ttl, absl::Seconds(1));
}

}  // namespace
}  // namespace kf::meta
