// Cross-cluster replication over real processes (docs/replication.md): two standalone servers,
// clusters "east" (primary) and "west" (secondary), configured with `kfctl replicate configure`.
// Writes and transactions (committed and rolled back) on the primary appear on the secondary
// exactly once and in the same per-vchannel order while either server is killed -9 at random
// points (KF_REPLICATION_ROUNDS rounds, default 4); what breaks the topology is refused with a
// clear error and writes nothing; `kfctl replicate promote` under load swaps the roles and the
// new primary holds every write either acknowledged, once; the secondary's catalog follows the
// primary's DDL and answers searches; `promote --force` fails over without the primary, which
// returns fenced and rejoins as the secondary.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "common/testing/temp_dir.h"
#include "grpcpp/client_context.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "kfctl_runner.h"
#include "kingfisher/client.h"
#include "kingfisher/consumer.h"
#include "kingfisher/producer.h"
#include "kingfisher/v1/replicate.grpc.pb.h"
#include "message/message.h"
#include "server_process.h"
#include "wire/status_convert.h"

namespace kf {
namespace {

using testing::ServerProcess;
using testing::TempDir;

// One delivered message as the test compares them: type, payload, a Txn's inner payloads.
std::string Describe(const kingfisher::ConsumedMessage& m) {
  std::string out = std::to_string(static_cast<int>(m.type)) + ":" + m.payload;
  for (const auto& inner : m.messages) out += "|" + inner.payload;
  return out;
}

// Everything on `vchannel` (TimeTicks left out), read from the start until `idle` passes
// without a message.
std::vector<kingfisher::ConsumedMessage> ReadAll(const std::string& endpoint,
                                                 const std::string& vchannel,
                                                 std::chrono::milliseconds idle) {
  std::vector<kingfisher::ConsumedMessage> out;
  auto client = kingfisher::Client::Connect({.endpoint = endpoint});
  if (!client.ok()) return out;
  auto consumer =
      (*client)->CreateConsumer({.vchannel = vchannel, .policy = kingfisher::DeliverPolicy::All()});
  if (!consumer.ok()) return out;
  // TimeTicks keep coming: only another message extends the wait.
  for (auto deadline = kingfisher::Clock::now() + idle;;) {
    auto m = (*consumer)->Next(deadline);
    if (!m.ok()) break;
    if (m->type == MessageType::kTimeTick) continue;
    out.push_back(*std::move(m));
    deadline = kingfisher::Clock::now() + idle;
  }
  (*consumer)->Close();
  return out;
}

std::vector<std::string> Described(const std::vector<kingfisher::ConsumedMessage>& all) {
  std::vector<std::string> out;
  for (const auto& m : all) out.push_back(Describe(m));
  return out;
}

// The catalog at `endpoint`, one line per collection: id, name, state, vchannels, partitions.
std::vector<std::string> Catalog(const std::string& endpoint) {
  std::vector<std::string> out;
  auto client = kingfisher::Client::Connect({.endpoint = endpoint});
  if (!client.ok()) return {client.status().ToString()};
  auto list = (*client)->ListCollections();
  if (!list.ok()) return {list.status().ToString()};
  for (const kingfisher::CollectionInfo& c : *list) {
    std::string line = std::to_string(c.id) + " " + c.name + " " + c.state;
    for (const std::string& v : c.vchannels) line += " " + v;
    for (const auto& p : c.partitions) line += " " + p.name + ":" + p.state;
    out.push_back(std::move(line));
  }
  return out;
}

// The pks of a strong search of `collection` at `endpoint` near (5, 0, 0, 1), best first.
std::vector<int64_t> Search(const std::string& endpoint, const std::string& collection) {
  auto client = kingfisher::Client::Connect({.endpoint = endpoint});
  if (!client.ok()) return {};
  kingfisher::SearchOptions options;
  options.consistency = kingfisher::Consistency::kStrong;
  options.topk = 20;
  auto result = (*client)->Search(collection, {5, 0, 0, 1}, options);
  EXPECT_TRUE(result.ok()) << endpoint << ": " << result.status();
  std::vector<int64_t> pks;
  if (result.ok()) {
    for (const kingfisher::SearchHit& h : result->hits.at(0)) pks.push_back(h.pk);
  }
  return pks;
}

kingfisher::Message Insert(const std::string& vchannel, std::string payload) {
  return kingfisher::Message{
      .type = MessageType::kInsert, .vchannel = vchannel, .payload = std::move(payload)};
}

class ReplicationE2E : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    east_ = new ServerProcess({.data_dir = dir_->path() + "/east",
                               .extra_args = {"--cluster", "east", "--pchannels", "2"}});
    west_ = new ServerProcess({.data_dir = dir_->path() + "/west",
                               .extra_args = {"--cluster", "west", "--pchannels", "2"}});
    ASSERT_TRUE(east_->Start()) << east_->Output();
    ASSERT_TRUE(west_->Start()) << west_->Output();
  }
  static void TearDownTestSuite() {
    delete east_;
    delete west_;
    delete dir_;
  }
  void SetUp() override {
    if (east_ == nullptr || east_->pid() <= 0 || west_->pid() <= 0) {
      GTEST_SKIP() << "a server did not start";
    }
  }

  static testing::KfctlResult Kfctl(std::vector<std::string> args) {
    return KfctlAt(east_, std::move(args));
  }
  static testing::KfctlResult KfctlAt(ServerProcess* at, std::vector<std::string> args) {
    args.insert(args.begin(), {"--endpoint", at->address(), "--timeout", "30"});
    return testing::RunKfctl(dir_->path(), args);
  }
  static testing::KfctlResult Configure() {
    return Kfctl({"replicate", "configure", "--primary", "east=" + east_->address(), "--secondary",
                  "west=" + west_->address()});
  }

  static TempDir* dir_;
  static ServerProcess* east_;
  static ServerProcess* west_;
};

TempDir* ReplicationE2E::dir_ = nullptr;
ServerProcess* ReplicationE2E::east_ = nullptr;
ServerProcess* ReplicationE2E::west_ = nullptr;

TEST_F(ReplicationE2E, WhatBreaksTheTopologyIsRefusedAndWritesNothing) {
  // The endpoint says which cluster it is.
  testing::KfctlResult wrong =
      Kfctl({"replicate", "configure", "--primary", "nope=" + east_->address(), "--secondary",
             "west=" + west_->address()});
  EXPECT_EQ(wrong.exit_code, 2) << testing::Describe(wrong);
  EXPECT_NE(wrong.err.find("is cluster east, not nope"), std::string::npos) << wrong.err;
  // A cycle: the primary its own secondary.
  testing::KfctlResult cycle =
      Kfctl({"replicate", "configure", "--primary", "east=" + east_->address(), "--secondary",
             "east=" + east_->address()});
  EXPECT_EQ(cycle.exit_code, 2) << testing::Describe(cycle);
  EXPECT_NE(cycle.err.find("cluster east twice"), std::string::npos) << cycle.err;
  // A secondary with another pchannel count.
  ServerProcess south({.data_dir = dir_->path() + "/south",
                       .extra_args = {"--cluster", "south", "--pchannels", "3"}});
  ASSERT_TRUE(south.Start()) << south.Output();
  testing::KfctlResult count =
      Kfctl({"replicate", "configure", "--primary", "east=" + east_->address(), "--secondary",
             "south=" + south.address()});
  EXPECT_EQ(count.exit_code, 2) << testing::Describe(count);
  EXPECT_NE(count.err.find("cluster south has 3 pchannels and the first cluster 2"),
            std::string::npos)
      << count.err;
  south.Stop();

  // Nothing was configured: both clusters still take writes.
  for (ServerProcess* s : {east_, west_}) {
    auto client = kingfisher::Client::Connect({.endpoint = s->address()});
    ASSERT_TRUE(client.ok()) << client.status();
    auto producer = *(*client)->CreateProducer();
    const std::string pchannel = s == east_ ? "east-dml_0" : "west-dml_0";
    EXPECT_TRUE(producer->AppendSync(Insert(pchannel + "_before", "x")).ok());
  }

  // Once configured, the secondary refuses user writes, naming its primary, and the primary
  // refuses replicated messages.
  testing::KfctlResult configured = Configure();
  ASSERT_EQ(configured.exit_code, 0) << testing::Describe(configured);
  ASSERT_EQ(configured.lines.size(), 2u);
  EXPECT_EQ(configured.lines[0]["cluster"], "west");
  EXPECT_EQ(configured.lines[0]["role"], "secondary");
  EXPECT_EQ(configured.lines[1]["cluster"], "east");
  EXPECT_EQ(configured.lines[1]["role"], "primary");

  auto client = kingfisher::Client::Connect({.endpoint = west_->address()});
  ASSERT_TRUE(client.ok());
  auto producer = *(*client)->CreateProducer();
  auto refused = producer->AppendSync(Insert("west-dml_0_user", "nope"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(refused.status().message().find("secondary of cluster east"), std::string::npos)
      << refused.status();
  // So does its coordinator a DDL: its catalog follows the primary's.
  auto ddl = (*client)->CreateCollection({.name = "mine", .dim = 4});
  EXPECT_EQ(ddl.status().code(), absl::StatusCode::kFailedPrecondition) << ddl.status();
  EXPECT_NE(ddl.status().message().find("secondary of cluster east"), std::string::npos)
      << ddl.status();

  auto stub = kingfisher::v1::Replicate::NewStub(
      grpc::CreateChannel(east_->address(), grpc::InsecureChannelCredentials()));
  kingfisher::v1::ReplicateAppendRequest request;
  request.set_pchannel("east-dml_0");
  request.set_source_cluster_id("west");
  request.set_source_pchannel("west-dml_0");
  MutableMessage m(MessageType::kInsert, "from west");
  m.set_vchannel("west-dml_0_rh");
  m.set_timetick(TimeTick(1000));
  kingfisher::v1::ConsumedMessage* c = request.add_messages();
  c->set_message_id(MessageId(WalKind::kLocal, 0, 7).Encode());
  m.EncodeTo(c->mutable_message());
  kingfisher::v1::ReplicateAppendResponse response;
  grpc::ClientContext ctx;
  ASSERT_TRUE(stub->Append(&ctx, request, &response).ok());
  ASSERT_EQ(response.results_size(), 1);
  absl::Status rh = wire::FromProtoError(response.results(0).error());
  EXPECT_EQ(GetStreamingCode(rh), StreamingCode::kReplicateViolation) << rh;
  EXPECT_TRUE(ReadAll(east_->address(), "east-dml_0_rh", std::chrono::milliseconds(300)).empty());
}

TEST_F(ReplicationE2E, EveryMessageReachesTheSecondaryOnceInOrderWhileServersAreKilled) {
  testing::KfctlResult configured = Configure();  // idempotent: the same configuration again
  ASSERT_EQ(configured.exit_code, 0) << testing::Describe(configured);
  const char* env = std::getenv("KF_REPLICATION_ROUNDS");
  const int rounds = env != nullptr ? std::atoi(env) : 4;
  std::mt19937 rng(::getpid());
  std::vector<std::string> vchannels = {"east-dml_0_orders", "east-dml_1_orders"};
  // A collection too: its CreateCollection, and Inserts and Deletes of its two shards.
  kingfisher::CollectionInfo collection;
  {
    auto client = kingfisher::Client::Connect({.endpoint = east_->address()});
    ASSERT_TRUE(client.ok()) << client.status();
    auto created = (*client)->CreateCollection({.name = "items", .dim = 4, .shards = 2});
    ASSERT_TRUE(created.ok()) << created.status();
    collection = *created;
  }
  ASSERT_EQ(collection.vchannels.size(), 2u);

  int written = 0;
  for (int round = 0; round < rounds; ++round) {
    // A writer on the primary for the whole round; one of the two servers is killed -9 at a
    // random point of it and restarted.
    std::atomic<bool> stop{false};
    std::thread writer([&, round] {
      auto client = kingfisher::Client::Connect({.endpoint = east_->address()});
      if (!client.ok()) return;
      auto producer = *(*client)->CreateProducer();
      for (int i = 0; !stop.load(); ++i) {
        const std::string& v = vchannels[i % 2];
        const std::string tag = "r" + std::to_string(round) + "-" + std::to_string(i);
        if (i % 10 == 3) {  // rows of the collection, and deletes of some
          const std::string& shard = collection.vchannels[(i / 10) % 2];
          auto m = i % 30 == 3 ? kingfisher::DeleteMessage(shard, {i - 30})
                               : kingfisher::InsertMessage(shard, {.collection_id = collection.id,
                                                                   .dim = 4,
                                                                   .pks = {i},
                                                                   .vectors = {1.0f * i, 0, 0, 1}});
          if (m.ok()) (void)producer->AppendSync(*std::move(m));
          continue;
        }
        if (i == 40) {  // DDL: this round's collection, and the previous one's dropped
          auto east = kingfisher::Client::Connect({.endpoint = east_->address()});
          if (!east.ok()) continue;
          (void)(*east)->CreateCollection({.name = "c" + std::to_string(round), .dim = 4});
          if (round > 0) {
            (void)(*east)->CreatePartition("c" + std::to_string(round - 1), "p");
            (void)(*east)->DropCollection("c" + std::to_string(round - 1));
          }
          continue;
        }
        if (i % 25 == 7) {  // a transaction, committed or rolled back
          auto txn = producer->BeginTxn(v);
          if (!txn.ok()) continue;
          (void)(*txn)->AppendSync(Insert(v, tag + "-b1"));
          (void)(*txn)->AppendSync(Insert(v, tag + "-b2"));
          if (i % 2 == 0) {
            (void)(*txn)->Commit();
          } else {
            (void)(*txn)->Rollback();
          }
          continue;
        }
        (void)producer->AppendSync(Insert(v, tag));
      }
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200 + rng() % 800));  // chaos timing
    ServerProcess* victim = rng() % 2 == 0 ? east_ : west_;
    victim->Kill();
    std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 300));
    ASSERT_TRUE(victim->Start()) << victim->Output();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stop = true;
    writer.join();
    ++written;
  }
  ASSERT_EQ(written, rounds);

  // The primary's log is the truth: the secondary must hold exactly it, in order.
  for (const std::string& v : collection.vchannels) vchannels.push_back(v);
  for (const std::string& v : vchannels) {
    const std::vector<kingfisher::ConsumedMessage> primary =
        ReadAll(east_->address(), v, std::chrono::seconds(2));
    ASSERT_GT(primary.size(), static_cast<size_t>(rounds)) << v;
    const std::string peer = "west" + v.substr(4);
    std::vector<kingfisher::ConsumedMessage> secondary;
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
         std::chrono::steady_clock::now() < deadline;) {
      secondary = ReadAll(west_->address(), peer, std::chrono::milliseconds(500));
      if (secondary.size() >= primary.size()) break;
    }
    // A CreateCollection's schema names its vchannels: the secondary's own.
    std::vector<std::string> expected = Described(primary);
    for (std::string& d : expected) {
      for (size_t at = d.find("east-dml_"); at != std::string::npos; at = d.find("east-dml_", at)) {
        d.replace(at, 4, "west");
      }
    }
    EXPECT_EQ(Described(secondary), expected) << v;
    std::printf("%s: %zu messages on the primary, %zu on the secondary, after %d rounds\n",
                v.c_str(), primary.size(), secondary.size(), rounds);
    for (const auto& m : secondary) {
      EXPECT_EQ(m.vchannel, peer);
      const auto& carrier = m.messages.empty() ? m : m.messages.back();
      EXPECT_TRUE(carrier.properties.contains("_rh")) << Describe(m);
    }
  }

  // The secondary's catalog is the primary's (DDL through its own coordinator), and a search
  // there answers what one on the primary does.
  // (Re-read both: a DDL that outlived its caller's deadline completes in the background.)
  std::vector<std::string> catalog, expected_catalog, replicated_catalog;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    catalog = Catalog(east_->address());
    expected_catalog = catalog;
    for (std::string& c : expected_catalog) {
      for (size_t at = c.find("east-dml_"); at != std::string::npos; at = c.find("east-dml_", at)) {
        c.replace(at, 4, "west");
      }
    }
    replicated_catalog = Catalog(west_->address());
    if (replicated_catalog == expected_catalog) break;
  }
  EXPECT_EQ(replicated_catalog, expected_catalog);
  std::printf("catalog of %zu collections equal on both clusters\n", catalog.size());
  EXPECT_EQ(Search(west_->address(), "items"), Search(east_->address(), "items"));
  EXPECT_FALSE(Search(west_->address(), "items").empty());

  testing::KfctlResult status = Kfctl({"replicate", "status"});
  ASSERT_EQ(status.exit_code, 0) << testing::Describe(status);
  ASSERT_EQ(status.lines.size(), 1u);
  const auto& replicators = status.lines[0]["replicators"];
  ASSERT_EQ(replicators.size(), 2u) << status.out;
  for (const auto& r : replicators) {
    EXPECT_EQ(r["secondary_cluster_id"], "west");
    EXPECT_EQ(r["state"], "replicating") << status.out;
    EXPECT_EQ(r["lag_messages"], "0") << status.out;  // caught up
  }
}

TEST_F(ReplicationE2E, PromoteSwapsTheRolesUnderLoadAndLosesOrDoublesNothing) {
  testing::KfctlResult configured = Configure();
  ASSERT_EQ(configured.exit_code, 0) << testing::Describe(configured);
  // A writer on east until east refuses (it became a secondary), then on west.
  std::atomic<bool> stop{false};
  std::vector<std::string> acked;  // payloads acknowledged by either cluster
  std::thread writer([&] {
    auto east_client = kingfisher::Client::Connect({.endpoint = east_->address()});
    auto west_client = kingfisher::Client::Connect({.endpoint = west_->address()});
    if (!east_client.ok() || !west_client.ok()) return;
    auto east = *(*east_client)->CreateProducer();
    auto west = *(*west_client)->CreateProducer();
    bool on_west = false;
    for (int i = 0; !stop.load(); ++i) {
      const std::string payload = "sw-" + std::to_string(i);
      if (!on_west) {
        auto r = east->AppendSync(Insert("east-dml_0_sw", payload));
        if (r.ok()) acked.push_back(payload);
        on_west = !r.ok() && GetStreamingCode(r.status()) == StreamingCode::kReplicateViolation;
        continue;
      }
      auto r = west->AppendSync(Insert("west-dml_0_sw", payload));
      if (r.ok()) acked.push_back(payload);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // load before the switch
  testing::KfctlResult promoted = testing::RunKfctl(
      dir_->path(),
      {"--endpoint", west_->address(), "--timeout", "30", "replicate", "promote", "west"});
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // load after it
  stop = true;
  writer.join();
  ASSERT_EQ(promoted.exit_code, 0) << testing::Describe(promoted);
  ASSERT_EQ(promoted.lines.size(), 2u);
  EXPECT_EQ(promoted.lines[0]["cluster"], "east");
  EXPECT_EQ(promoted.lines[0]["role"], "secondary");
  EXPECT_EQ(promoted.lines[1]["cluster"], "west");
  EXPECT_EQ(promoted.lines[1]["role"], "primary");

  // The surviving primary holds every acknowledged write once; the old one, now its
  // secondary, holds the same log in the same order.
  const std::vector<kingfisher::ConsumedMessage> primary =
      ReadAll(west_->address(), "west-dml_0_sw", std::chrono::seconds(2));
  std::map<std::string, int> count;
  for (const auto& m : primary) ++count[m.payload];
  for (const std::string& p : acked) EXPECT_EQ(count[p], 1) << p;
  for (const auto& [p, n] : count) EXPECT_EQ(n, 1) << p;
  std::vector<kingfisher::ConsumedMessage> secondary;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < deadline;) {
    secondary = ReadAll(east_->address(), "east-dml_0_sw", std::chrono::milliseconds(500));
    if (secondary.size() >= primary.size()) break;
  }
  EXPECT_EQ(Described(secondary), Described(primary));
  std::printf("switchover: %zu writes acknowledged, %zu in the new primary's log\n", acked.size(),
              primary.size());
  auto east_client = kingfisher::Client::Connect({.endpoint = east_->address()});
  ASSERT_TRUE(east_client.ok());
  auto refused = (*(*east_client)->CreateProducer())->AppendSync(Insert("east-dml_0_sw", "late"));
  EXPECT_EQ(GetStreamingCode(refused.status()), StreamingCode::kReplicateViolation)
      << refused.status();
}

// Runs after the switchover above (west primary, east its secondary) and leaves that again. A
// switchover's handover is cut: the secondary is down when the primary is configured out, and
// the primary's node restarts before it could hand over; the restarted node still hands
// everything over (WalReplicateState.handovers).
TEST_F(ReplicationE2E, AHandoverSurvivesARestartOfTheOldPrimary) {
  testing::KfctlResult configured =
      KfctlAt(west_, {"replicate", "configure", "--primary", "west=" + west_->address(),
                      "--secondary", "east=" + east_->address()});
  ASSERT_EQ(configured.exit_code, 0) << testing::Describe(configured);
  std::vector<std::string> acked;
  {
    auto client = kingfisher::Client::Connect({.endpoint = west_->address()});
    ASSERT_TRUE(client.ok());
    auto producer = *(*client)->CreateProducer();
    // One write that east has (a checkpoint on that pchannel), then east is down for the rest.
    ASSERT_TRUE(producer->AppendSync(Insert("west-dml_1_ho", "h-start")).ok());
    acked.push_back("h-start");
    for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
         std::chrono::steady_clock::now() < deadline &&
         ReadAll(east_->address(), "east-dml_1_ho", std::chrono::milliseconds(200)).empty();) {
    }
    east_->Kill();
    for (int i = 0; i < 100; ++i) {
      const std::string payload = "h-" + std::to_string(i);
      auto r = producer->AppendSync(Insert("west-dml_1_ho", payload));
      ASSERT_TRUE(r.ok()) << r.status();
      acked.push_back(payload);
    }
  }
  // The replicator of west-dml_1 reports them as its lag.
  bool lagging = false;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
       !lagging && std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
    testing::KfctlResult status = KfctlAt(west_, {"replicate", "status"});
    if (status.exit_code != 0 || status.lines.empty()) continue;
    for (const auto& r : status.lines[0]["replicators"]) {
      lagging = lagging || (r["pchannel"] == "west-dml_1" && r.contains("lag_messages") &&
                            std::stoull(r["lag_messages"].get<std::string>()) >= 100);
    }
  }
  EXPECT_TRUE(lagging) << KfctlAt(west_, {"replicate", "status"}).out;
  // West alone is configured out (as `promote` does first; east is down), then west restarts
  // at once.
  {
    auto admin = kingfisher::v1::ReplicateAdmin::NewStub(
        grpc::CreateChannel(west_->address(), grpc::InsecureChannelCredentials()));
    kingfisher::v1::GetReplicateConfigResponse current;
    grpc::ClientContext get;
    ASSERT_TRUE(admin->GetReplicateConfig(&get, {}, &current).ok());
    kingfisher::v1::AlterReplicateConfigRequest alter;
    *alter.mutable_config() = current.config();
    ASSERT_EQ(alter.config().topology_size(), 1);
    alter.mutable_config()->mutable_topology(0)->set_source_cluster_id("east");
    alter.mutable_config()->mutable_topology(0)->set_target_cluster_id("west");
    kingfisher::v1::AlterReplicateConfigResponse altered;
    grpc::ClientContext ctx;
    grpc::Status s = admin->AlterReplicateConfig(&ctx, alter, &altered);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  west_->Kill();
  ASSERT_TRUE(west_->Start()) << west_->Output();
  ASSERT_TRUE(east_->Start()) << east_->Output();

  bool handed_over = false;
  std::string last_status;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       !handed_over && std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    testing::KfctlResult status = KfctlAt(west_, {"replicate", "status"});
    last_status = status.out + status.err;
    if (status.exit_code != 0 || status.lines.empty()) continue;
    for (const auto& r : status.lines[0]["replicators"]) {
      handed_over = handed_over || (r["pchannel"] == "west-dml_1" && r["state"] == "handed_over");
    }
  }
  EXPECT_TRUE(handed_over) << last_status;
  std::vector<std::string> got;
  for (const auto& m : ReadAll(east_->address(), "east-dml_1_ho", std::chrono::seconds(1))) {
    got.push_back(m.payload);
  }
  EXPECT_EQ(got, acked);

  // Back to west primary, east secondary.
  configured = KfctlAt(west_, {"replicate", "configure", "--primary", "west=" + west_->address(),
                               "--secondary", "east=" + east_->address()});
  ASSERT_EQ(configured.exit_code, 0) << testing::Describe(configured);
}

// Runs after the switchover above (west primary, east its secondary; configured here when run
// alone). The primary dies; `promote --force` makes the secondary a primary alone; the old
// primary returns fenced, and is reconfigured as the new primary's secondary.
TEST_F(ReplicationE2E, FailoverPromotesTheSecondaryAloneAndTheOldPrimaryRejoinsAsItsSecondary) {
  auto payloads = [](const std::vector<kingfisher::ConsumedMessage>& log, char tag) {
    std::vector<std::string> out;
    for (const auto& m : log) {
      if (!m.payload.empty() && m.payload[0] == tag) out.push_back(m.payload);
    }
    return out;
  };
  auto write = [](ServerProcess* at, const std::string& vchannel, char tag, int n) {
    std::vector<std::string> acked;
    auto client = kingfisher::Client::Connect({.endpoint = at->address()});
    EXPECT_TRUE(client.ok());
    if (!client.ok()) return acked;
    auto producer = *(*client)->CreateProducer();
    for (int i = 0; i < n; ++i) {
      const std::string payload = std::string(1, tag) + "-" + std::to_string(i);
      auto r = producer->AppendSync(Insert(vchannel, payload));
      EXPECT_TRUE(r.ok()) << r.status();
      if (r.ok()) acked.push_back(payload);
    }
    return acked;
  };
  testing::KfctlResult configured =
      KfctlAt(west_, {"replicate", "configure", "--primary", "west=" + west_->address(),
                      "--secondary", "east=" + east_->address()});
  ASSERT_EQ(configured.exit_code, 0) << testing::Describe(configured);

  // Some writes are on the secondary when the primary dies, the last ones maybe not.
  std::vector<std::string> before = write(west_, "west-dml_1_fo", 'p', 200);
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
       std::chrono::steady_clock::now() < deadline &&
       payloads(ReadAll(east_->address(), "east-dml_1_fo", std::chrono::milliseconds(200)), 'p')
               .size() < before.size();) {
  }
  const std::vector<std::string> tail = write(west_, "west-dml_1_fo", 'q', 100);
  west_->Kill();
  before.insert(before.end(), tail.begin(), tail.end());
  testing::KfctlResult promoted = KfctlAt(east_, {"replicate", "promote", "east", "--force"});
  ASSERT_EQ(promoted.exit_code, 0) << testing::Describe(promoted);
  ASSERT_EQ(promoted.lines.size(), 1u);
  EXPECT_EQ(promoted.lines[0]["cluster"], "east");
  const std::vector<std::string> after = write(east_, "east-dml_1_fo", 's', 100);
  ASSERT_EQ(after.size(), 100u);

  // The new primary: a prefix of what the old one acknowledged (what was replicated before it
  // died), then its own writes, each once.
  const std::vector<kingfisher::ConsumedMessage> log =
      ReadAll(east_->address(), "east-dml_1_fo", std::chrono::seconds(1));
  std::vector<std::string> replicated = payloads(log, 'p');
  for (const std::string& q : payloads(log, 'q')) replicated.push_back(q);
  ASSERT_LE(replicated.size(), before.size());
  EXPECT_GE(replicated.size(), 200u);
  EXPECT_EQ(replicated,
            std::vector<std::string>(before.begin(), before.begin() + replicated.size()));
  EXPECT_EQ(payloads(log, 's'), after);
  std::printf("failover: %zu of %zu writes acknowledged by the old primary were replicated\n",
              replicated.size(), before.size());

  // The old primary returns: its replicators are fenced (the new primary is nobody's
  // secondary), then it is reconfigured as the new primary's secondary.
  ASSERT_TRUE(west_->Start()) << west_->Output();
  bool fenced = false;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       !fenced && std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(std::chrono::milliseconds(200))) {
    testing::KfctlResult status = KfctlAt(west_, {"replicate", "status"});
    if (status.exit_code != 0 || status.lines.empty()) continue;
    for (const auto& r : status.lines[0]["replicators"]) fenced = fenced || r["state"] == "fenced";
  }
  EXPECT_TRUE(fenced);
  configured = KfctlAt(east_, {"replicate", "configure", "--primary", "east=" + east_->address(),
                               "--secondary", "west=" + west_->address()});
  ASSERT_EQ(configured.exit_code, 0) << testing::Describe(configured);
  auto west_client = kingfisher::Client::Connect({.endpoint = west_->address()});
  ASSERT_TRUE(west_client.ok());
  auto refused = (*(*west_client)->CreateProducer())->AppendSync(Insert("west-dml_1_fo", "late"));
  EXPECT_EQ(GetStreamingCode(refused.status()), StreamingCode::kReplicateViolation)
      << refused.status();
  const std::vector<std::string> more = write(east_, "east-dml_1_fo", 't', 50);

  // The old primary gets the new one's writes once, in order; its own stay as they were.
  std::vector<std::string> expected = after;
  expected.insert(expected.end(), more.begin(), more.end());
  std::vector<kingfisher::ConsumedMessage> rejoined;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       std::chrono::steady_clock::now() < deadline;) {
    rejoined = ReadAll(west_->address(), "west-dml_1_fo", std::chrono::milliseconds(500));
    if (payloads(rejoined, 's').size() + payloads(rejoined, 't').size() >= expected.size()) break;
  }
  std::vector<std::string> got = payloads(rejoined, 's');
  for (const std::string& t : payloads(rejoined, 't')) got.push_back(t);
  EXPECT_EQ(got, expected);
  std::vector<std::string> own = payloads(rejoined, 'p');
  for (const std::string& q : payloads(rejoined, 'q')) own.push_back(q);
  EXPECT_EQ(own, before);
}

}  // namespace
}  // namespace kf
