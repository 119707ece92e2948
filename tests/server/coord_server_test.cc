// `kingfisher run coord` against a real etcd (EtcdProcess): streaming nodes are simulated by
// the test (nodes/<id> keys on leases, written through EtcdMetaStore) and assignments are
// watched through the coordinator's gRPC WatchAssignments stream, as clients do.
#include <signal.h>

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "server_process.h"
#include "storage/meta/etcd_meta_store.h"
#include "storage/meta/testing/etcd_process.h"
#include "streaming/cluster_meta.h"

namespace kf::testing {
namespace {

using kingfisher::v1::AssignmentSnapshot;
using kingfisher::v1::StreamingCoord;

constexpr absl::Duration kWait = absl::Seconds(30);  // generous: only failures wait this long
constexpr char kCluster[] = "itest";

class CoordServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(etcd_.Start().ok()) << etcd_.LogTail();
    auto store = meta::EtcdMetaStore::Create({.endpoints = {etcd_.endpoint()}});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    coord_ = std::make_unique<ServerProcess>(ServerProcess::Options{
        .data_dir = dir_.path() + "/coord",
        .extra_args = {"--etcd", etcd_.endpoint(), "--cluster", kCluster, "--pchannels", "4",
                       "--lease-ttl", "2", "--balance-interval", "1"},
        .role = "coord"});
  }
  void TearDown() override {
    coord_.reset();
    store_.reset();
  }

  static absl::Time Deadline() { return absl::Now() + kWait; }

  // A streaming node's registration: nodes/<id> on a lease long enough for the whole test.
  void AddNode(int64_t id) {
    auto lease = store_->GrantLease(absl::Seconds(120), Deadline());
    ASSERT_TRUE(lease.ok()) << lease.status();
    kingfisher::v1::NodeInfo n;
    n.set_id(id);
    n.set_address("127.0.0.1:" + std::to_string(30000 + id));
    auto put = store_->Put(keys_.node(id), n.SerializeAsString(), Deadline(), lease->id);
    ASSERT_TRUE(put.ok()) << put.status();
    leases_[id] = lease->id;
  }
  // Revokes node `id`'s lease, retrying while etcd is unreachable (a revoke that landed but
  // was reported as failed answers NOT_FOUND the next time).
  void RemoveNode(int64_t id) {
    const absl::Time deadline = Deadline();
    absl::Status s;
    do {
      s = store_->RevokeLease(leases_.at(id), absl::Now() + absl::Seconds(2));
    } while (!s.ok() && !absl::IsNotFound(s) && absl::Now() < deadline);
    ASSERT_TRUE(s.ok() || absl::IsNotFound(s)) << s;
  }

  std::unique_ptr<StreamingCoord::Stub> Stub() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 50);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 50);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 200);
    // gRPC 1.51 re-resolves at most every 30 s by default: a restarted server would be
    // unreachable for a while.
    args.SetInt("grpc.dns_min_time_between_resolutions_ms", 100);
    return StreamingCoord::NewStub(
        grpc::CreateCustomChannel(coord_->address(), grpc::InsecureChannelCredentials(), args));
  }

  // AllocateTimestamps, retried while the coordinator is not acting (UNAVAILABLE).
  static kingfisher::v1::AllocateTimestampsResponse Allocate(StreamingCoord::Stub* stub,
                                                             uint32_t count) {
    const absl::Time deadline = Deadline();
    kingfisher::v1::AllocateTimestampsRequest req;
    req.set_count(count);
    kingfisher::v1::AllocateTimestampsResponse resp;
    grpc::Status s;
    do {
      grpc::ClientContext ctx;
      ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(2)));
      ctx.set_wait_for_ready(true);
      s = stub->AllocateTimestamps(&ctx, req, &resp);
      // UNAVAILABLE until it leads: each attempt is a round trip, the pacing of this poll.
    } while (s.error_code() == grpc::StatusCode::UNAVAILABLE && absl::Now() < deadline);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp;
  }

  // Reads the stream until `pred` holds on a snapshot (versions must grow); false if it ends.
  static bool ReadUntil(grpc::ClientReader<AssignmentSnapshot>* reader,
                        const std::function<bool(const AssignmentSnapshot&)>& pred,
                        AssignmentSnapshot* last) {
    AssignmentSnapshot s;
    while (reader->Read(&s)) {
      EXPECT_GT(s.version(), last->version());
      *last = s;
      if (pred(s)) return true;
    }
    return false;
  }
  static std::map<std::string, kingfisher::v1::PChannelAssignment> ByName(
      const AssignmentSnapshot& s) {
    std::map<std::string, kingfisher::v1::PChannelAssignment> out;
    for (const auto& p : s.pchannels()) out[p.pchannel()] = p;
    return out;
  }
  static bool Assigned(const AssignmentSnapshot& s, const std::function<bool(int64_t)>& node_ok) {
    if (s.pchannels_size() != 4) return false;
    for (const auto& p : s.pchannels()) {
      if (p.state() != kingfisher::v1::PCHANNEL_ASSIGNING || !node_ok(p.node())) return false;
    }
    return true;
  }
  // Polls the coordinator's log (an observable condition) until it contains `text`.
  bool WaitForLog(const std::string& text) {
    const absl::Time deadline = Deadline();
    while (absl::Now() < deadline) {
      if (coord_->Output().find(text) != std::string::npos) return true;
      grpc::ClientContext ctx;  // a status round trip paces the poll
      ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Milliseconds(100)));
      kingfisher::v1::GetStatusResponse resp;
      Stub()->GetStatus(&ctx, {}, &resp);
    }
    return false;
  }

  meta::testing::EtcdProcess etcd_;
  TempDir dir_;
  streaming::ClusterKeys keys_{kCluster};
  std::unique_ptr<meta::EtcdMetaStore> store_;
  std::unique_ptr<ServerProcess> coord_;
  std::map<int64_t, meta::LeaseId> leases_;
};

TEST_F(CoordServerTest, KillNineAndRestartKeepsAssignmentsAndTimestampsMonotonic) {
  AddNode(1);
  AddNode(2);
  ASSERT_TRUE(coord_->Start()) << coord_->Output();
  auto stub = Stub();
  AssignmentSnapshot before;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(Deadline()));
    auto reader = stub->WatchAssignments(&ctx, {});
    ASSERT_TRUE(ReadUntil(
        reader.get(),
        [](const auto& s) { return Assigned(s, [](int64_t n) { return n == 1 || n == 2; }); },
        &before))
        << coord_->Output();
    ctx.TryCancel();
  }
  std::map<int64_t, int> load;
  for (const auto& p : before.pchannels()) {
    EXPECT_EQ(p.term(), 1);
    ++load[p.node()];
  }
  EXPECT_EQ(load, (std::map<int64_t, int>{{1, 2}, {2, 2}}));
  auto t1 = Allocate(stub.get(), 100);
  const uint64_t last_before = t1.first() + t1.count() - 1;

  coord_->Kill();  // SIGKILL: its lease lingers until the TTL (2 s) expires
  ASSERT_TRUE(coord_->Start()) << coord_->Output();
  stub = Stub();
  auto t2 = Allocate(stub.get(), 100);  // UNAVAILABLE until the old lease expired
  EXPECT_GT(t2.first(), last_before);

  // The successor leads; make it act on a change: node 2 goes away. Node 1's pchannels keep
  // term 1 (nothing was rewritten), node 2's move at term 2.
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(Deadline()));
  auto reader = stub->WatchAssignments(&ctx, {});
  AssignmentSnapshot after;
  ASSERT_TRUE(reader->Read(&after));
  EXPECT_EQ(ByName(after).size(), 4u);
  for (const auto& [name, p] : ByName(before)) {
    EXPECT_EQ(ByName(after)[name].term(), p.term()) << name;
    EXPECT_EQ(ByName(after)[name].node(), p.node()) << name;
  }
  RemoveNode(2);
  ASSERT_TRUE(ReadUntil(
      reader.get(), [](const auto& s) { return Assigned(s, [](int64_t n) { return n == 1; }); },
      &after))
      << coord_->Output();
  for (const auto& [name, p] : ByName(before)) {
    EXPECT_EQ(ByName(after)[name].term(), p.node() == 1 ? 1 : 2) << name;
  }
  ctx.TryCancel();

  ProcessResult r = coord_->Stop();
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("stepped down (lease"), std::string::npos) << r.output;
}

TEST_F(CoordServerTest, SurvivesAnEtcdRestartAndKeepsServingDiscovery) {
  AddNode(1);
  AddNode(2);
  ASSERT_TRUE(coord_->Start()) << coord_->Output();
  auto stub = Stub();
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(Deadline() + kWait));
  auto reader = stub->WatchAssignments(&ctx, {});
  AssignmentSnapshot last;
  ASSERT_TRUE(ReadUntil(
      reader.get(),
      [](const auto& s) { return Assigned(s, [](int64_t n) { return n == 1 || n == 2; }); }, &last))
      << coord_->Output();
  const auto before = ByName(last);
  const uint64_t t1 = Allocate(stub.get(), 1).first();

  // Down for longer than the coordinator's lease TTL: it must stop acting (no timestamps),
  // keep running and serving discovery, and resume once etcd is back.
  etcd_.Kill();
  ASSERT_TRUE(WaitForLog("level=error")) << coord_->Output();
  ASSERT_TRUE(WaitForLog("stopped acting")) << coord_->Output();
  EXPECT_TRUE(coord_->Running()) << coord_->Output();
  {
    grpc::ClientContext actx;
    actx.set_deadline(absl::ToChronoTime(Deadline()));
    kingfisher::v1::AllocateTimestampsRequest req;
    req.set_count(1);
    kingfisher::v1::AllocateTimestampsResponse resp;
    EXPECT_EQ(stub->AllocateTimestamps(&actx, req, &resp).error_code(),
              grpc::StatusCode::UNAVAILABLE);
  }
  ASSERT_TRUE(etcd_.Start().ok()) << etcd_.LogTail();

  // The same stream, opened before the outage, shows what the coordinator does after it.
  RemoveNode(2);
  ASSERT_TRUE(ReadUntil(
      reader.get(), [](const auto& s) { return Assigned(s, [](int64_t n) { return n == 1; }); },
      &last))
      << coord_->Output();
  for (const auto& [name, p] : before) {
    EXPECT_EQ(ByName(last)[name].term(), p.node() == 1 ? p.term() : p.term() + 1) << name;
  }
  EXPECT_GT(Allocate(stub.get(), 1).first(), t1);
  EXPECT_TRUE(coord_->Running());
  ctx.TryCancel();

  ProcessResult r = coord_->Stop();
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::cerr << "DEBUGLOG\n" << r.output;
}

TEST_F(CoordServerTest, WaitsForEtcdAtStartupWithoutExiting) {
  etcd_.Kill();
  // Start waits for GetStatus, which the coordinator serves only once it reached etcd.
  ServerProcess::Options o{.data_dir = dir_.path() + "/early",
                           .extra_args = {"--etcd", etcd_.endpoint(), "--cluster", kCluster},
                           .role = "coord"};
  ServerProcess early(o);
  EXPECT_FALSE(early.Start(absl::Seconds(2)));
  EXPECT_TRUE(early.Running()) << early.Output();
  EXPECT_NE(early.Output().find("cannot reach etcd"), std::string::npos) << early.Output();
  early.Kill();
}

TEST(CoordServerConfigTest, RefusesToRunWithoutEtcd) {
  ProcessResult r = RunKingfisher({"run", "coord", "--listen", "127.0.0.1:0"});
  EXPECT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--etcd"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kf::testing
