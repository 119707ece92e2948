// The StreamingCoord service over loopback gRPC, in process: a Coordinator on the embedded
// store behind an RpcServer, and a generated client stub.
#include "rpc/coord_service.h"

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/synchronization/notification.h"
#include "client/router.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "rpc/oracle_raise_queue.h"
#include "rpc/rpc_server.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/meta/testing/fault_meta_store.h"
#include "streaming/coord/coordinator.h"

namespace kf::rpc {
namespace {

using kingfisher::v1::AssignmentSnapshot;
using kingfisher::v1::StreamingCoord;

constexpr absl::Duration kWait = absl::Seconds(20);

class CoordServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("coord_service_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto store = meta::EmbeddedMetaStore::Open(dir_.string(), {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    faulty_ = std::make_unique<meta::testing::FaultMetaStore>(store_.get());
    streaming::Coordinator::Options o;
    o.pchannels = {"kf-dml_0", "kf-dml_1"};
    o.lease_ttl = absl::Seconds(1);
    o.retry_backoff = absl::Milliseconds(20);
    auto c = streaming::Coordinator::Create(faulty_.get(), o, absl::Now() + kWait);
    ASSERT_TRUE(c.ok()) << c.status();
    coordinator_ = *std::move(c);
  }
  void TearDown() override {
    if (server_) server_->Shutdown(absl::ZeroDuration());
    server_.reset();
    coordinator_.reset();
    faulty_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Serves StreamingCoord; `with_oracle` false: as a streaming node does.
  void StartServer(bool with_oracle) {
    RpcServerOptions options;
    options.listen = "127.0.0.1:0";
    options.coord.view = coordinator_->view();
    options.coord.oracle = with_oracle ? coordinator_->oracle() : nullptr;
    auto server = RpcServer::Start(std::move(options));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    coordinator_->Start(server_->address());
    stub_ = StreamingCoord::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  void AddNode(int64_t id) {
    auto lease = store_->GrantLease(absl::Seconds(60), absl::Now() + kWait);
    ASSERT_TRUE(lease.ok());
    kingfisher::v1::NodeInfo n;
    n.set_id(id);
    n.set_address("127.0.0.1:" + std::to_string(20000 + id));
    ASSERT_TRUE(store_
                    ->Put(coordinator_->keys().node(id), n.SerializeAsString(), absl::Now() + kWait,
                          lease->id)
                    .ok());
    leases_[id] = lease->id;
  }

  static void SetDeadline(grpc::ClientContext* ctx) {
    ctx->set_deadline(absl::ToChronoTime(absl::Now() + kWait));
  }
  // Reads snapshots until `pred` holds; versions must grow. False when the stream ended first.
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
  static bool AllOn(const AssignmentSnapshot& s, int64_t node) {
    if (s.pchannels_size() != 2) return false;
    for (const auto& p : s.pchannels()) {
      if (p.node() != node) return false;
    }
    return true;
  }

  // Once the watch shows every pchannel on `node`, confirms them as that node would (ASSIGNED).
  void ConfirmAllOn(int64_t node) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    auto reader = stub_->WatchAssignments(&ctx, {});
    AssignmentSnapshot last;
    ASSERT_TRUE(ReadUntil(
        reader.get(), [node](const auto& s) { return AllOn(s, node); }, &last));
    ctx.TryCancel();
    for (const char* name : {"kf-dml_0", "kf-dml_1"}) {
      const std::string key = coordinator_->keys().pchannel(name);
      auto got = store_->Get(key, absl::Now() + kWait);
      ASSERT_TRUE(got.ok()) << got.status();
      kingfisher::v1::PChannelAssignment a;
      ASSERT_TRUE(a.ParseFromString(got->kv.value));
      a.set_state(kingfisher::v1::PCHANNEL_ASSIGNED);
      ASSERT_TRUE(store_->Put(key, a.SerializeAsString(), absl::Now() + kWait).ok());
    }
  }

  // A client's Router follows the watch: Resolve routes to the node holding a pchannel and,
  // after a routing error (the caller passes the version it used), to the next owner at its new
  // term. Snapshots in between (the other pchannel confirmed, node 2 joining) may still route to
  // node 1; a client then fails there again and passes the newer version, as this loop does.
  void ExpectRouterFollowsFailover() {
    AddNode(1);
    StartServer(/*with_oracle=*/true);
    client::Router router(server_->address(), grpc::ChannelArguments(),
                          grpc::InsecureChannelCredentials());
    ConfirmAllOn(1);
    auto first = router.Resolve("kf-dml_0", 0, absl::Now() + kWait);
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->node->address, "127.0.0.1:20001");
    EXPECT_EQ(first->term, 1);

    AddNode(2);
    ASSERT_TRUE(store_->RevokeLease(leases_[1], absl::Now() + kWait).ok());
    ConfirmAllOn(2);
    const absl::Time deadline = absl::Now() + kWait;
    client::Router::Route moved = *first;
    do {
      auto next = router.Resolve("kf-dml_0", moved.version, deadline);
      ASSERT_TRUE(next.ok()) << next.status();
      ASSERT_GT(next->version, moved.version);
      moved = *next;
    } while (moved.term == 1 && moved.node->address == "127.0.0.1:20001");
    EXPECT_EQ(moved.node->address, "127.0.0.1:20002");
    EXPECT_EQ(moved.term, 2);
  }

  std::filesystem::path dir_;
  std::unique_ptr<meta::EmbeddedMetaStore> store_;
  std::unique_ptr<meta::testing::FaultMetaStore> faulty_;  // the coordinator's view of store_
  std::unique_ptr<streaming::Coordinator> coordinator_;
  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<StreamingCoord::Stub> stub_;
  std::map<int64_t, meta::LeaseId> leases_;
};

TEST_F(CoordServiceTest, WatchSendsTheCurrentAssignmentThenEveryChange) {
  AddNode(1);
  StartServer(/*with_oracle=*/true);
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  auto reader = stub_->WatchAssignments(&ctx, {});
  AssignmentSnapshot last;
  ASSERT_TRUE(ReadUntil(
      reader.get(), [](const auto& s) { return AllOn(s, 1); }, &last));
  EXPECT_EQ(last.nodes_size(), 1);
  for (const auto& p : last.pchannels()) EXPECT_EQ(p.term(), 1);

  AddNode(2);
  ASSERT_TRUE(store_->RevokeLease(leases_[1], absl::Now() + kWait).ok());
  ASSERT_TRUE(ReadUntil(
      reader.get(), [](const auto& s) { return AllOn(s, 2); }, &last));
  for (const auto& p : last.pchannels()) EXPECT_EQ(p.term(), 2);

  // A second watcher starts from the current assignment.
  grpc::ClientContext ctx2;
  SetDeadline(&ctx2);
  auto reader2 = stub_->WatchAssignments(&ctx2, {});
  AssignmentSnapshot first;
  ASSERT_TRUE(reader2->Read(&first));
  EXPECT_GE(first.version(), last.version());
  EXPECT_TRUE(AllOn(first, 2));
  ctx.TryCancel();
  ctx2.TryCancel();
}

TEST_F(CoordServiceTest, RouterFollowsFailover) { ExpectRouterFollowsFailover(); }

TEST_F(CoordServiceTest, GetStatusReportsNodesAndPChannels) {
  AddNode(3);
  StartServer(/*with_oracle=*/true);
  const absl::Time deadline = absl::Now() + kWait;
  kingfisher::v1::GetStatusResponse resp;
  // Polls the observable status until the coordinator assigned both pchannels.
  while (absl::Now() < deadline) {
    // Read before the call: a change landing during the call then ends the wait below at once.
    const int64_t seen = coordinator_->view()->Current()->version;
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    resp.Clear();
    ASSERT_TRUE(stub_->GetStatus(&ctx, {}, &resp).ok());
    if (resp.pchannels_size() == 2 && resp.pchannels(0).node() == 3 &&
        resp.pchannels(1).node() == 3) {
      break;
    }
    coordinator_->view()->WaitNewer(seen, deadline);
  }
  ASSERT_EQ(resp.nodes_size(), 1);
  EXPECT_EQ(resp.nodes(0).id(), 3);
  EXPECT_EQ(resp.nodes(0).address(), "127.0.0.1:20003");
  EXPECT_EQ(resp.nodes(0).state(), "ONLINE");
  ASSERT_EQ(resp.pchannels_size(), 2);
  EXPECT_EQ(resp.pchannels(0).pchannel(), "kf-dml_0");
  EXPECT_EQ(resp.pchannels(0).state(), "ASSIGNING");
  EXPECT_EQ(resp.pchannels(0).term(), 1);
}

TEST_F(CoordServiceTest, AllocateTimestamps) {
  StartServer(/*with_oracle=*/true);
  ASSERT_TRUE(coordinator_->WaitActing(true, absl::Now() + kWait));
  uint64_t prev = 0;
  for (int i = 0; i < 3; ++i) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    kingfisher::v1::AllocateTimestampsRequest req;
    req.set_count(100);
    req.set_at_least(i == 1 ? prev + 1000 : 0);
    kingfisher::v1::AllocateTimestampsResponse resp;
    grpc::Status s = stub_->AllocateTimestamps(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(resp.count(), 100u);
    EXPECT_GT(resp.first(), prev);
    EXPECT_GT(resp.first(), req.at_least());
    prev = resp.first() + 99;
  }
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  kingfisher::v1::AllocateTimestampsResponse resp;
  EXPECT_EQ(stub_->AllocateTimestamps(&ctx, {}, &resp).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
}

// An allocation that needs the oracle's mark raised waits for that store call on a worker:
// the process's other calls, served by the one CompletionLoop, are answered meanwhile.
TEST_F(CoordServiceTest, AnAllocationWaitingForItsRaiseHoldsUpNoOtherCall) {
  AddNode(1);
  StartServer(/*with_oracle=*/true);
  ASSERT_TRUE(coordinator_->WaitActing(true, absl::Now() + kWait));
  auto allocate = [this](uint64_t at_least, absl::Duration timeout) {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + timeout));
    kingfisher::v1::AllocateTimestampsRequest req;
    req.set_count(1);
    req.set_at_least(at_least);
    kingfisher::v1::AllocateTimestampsResponse resp;
    grpc::Status s = stub_->AllocateTimestamps(&ctx, req, &resp);
    return std::make_pair(s, resp.first());
  };
  ASSERT_TRUE(allocate(0, kWait).first.ok());  // the oracle now serves below a raised mark

  faulty_->HoldTxnsOn(coordinator_->keys().tso());
  const uint64_t past_the_mark = coordinator_->oracle()->mark() + 1000;
  std::pair<grpc::Status, uint64_t> held;
  std::thread raising([&] { held = allocate(past_the_mark, kWait); });
  auto release = absl::MakeCleanup([&] {
    faulty_->ReleaseHeld();
    raising.join();
  });
  ASSERT_TRUE(faulty_->WaitHeld(absl::Now() + kWait));

  // Meanwhile the loop answers.
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
  kingfisher::v1::GetStatusResponse status;
  EXPECT_TRUE(stub_->GetStatus(&ctx, {}, &status).ok());
  const auto below = allocate(0, absl::Seconds(5));
  EXPECT_TRUE(below.first.ok()) << below.first.error_message();
  EXPECT_LT(below.second, past_the_mark);

  std::move(release).Invoke();
  ASSERT_TRUE(held.first.ok()) << held.first.error_message();
  EXPECT_EQ(held.second, past_the_mark + 1);
}

// The raise queue: calls behind a raise wait for it; at Close the queued ones are answered
// ON_SHUTDOWN at once and the one in flight finishes; a call whose deadline passed while queued
// is not served.
TEST_F(CoordServiceTest, RaiseQueueAnswersEveryCallOnce) {
  StartServer(/*with_oracle=*/true);  // the coordinator acts once started
  ASSERT_TRUE(coordinator_->WaitActing(true, absl::Now() + kWait));
  streaming::TimestampOracle* oracle = coordinator_->oracle();
  ASSERT_TRUE(oracle->Allocate().ok());
  const TimeTick past_the_mark(oracle->mark() + 1000);
  faulty_->HoldTxnsOn(coordinator_->keys().tso());

  absl::Mutex mu;
  std::vector<absl::StatusOr<TimeTick>> answers(3, absl::UnknownError("no answer"));
  auto record = [&](int i) {
    return [&, i](absl::StatusOr<TimeTick> first) {
      absl::MutexLock l(&mu);
      answers[i] = std::move(first);
    };
  };
  OracleRaiseQueue queue(oracle);
  queue.Add(1, past_the_mark, absl::Now() + kWait, record(0));  // its raise is held
  ASSERT_TRUE(faulty_->WaitHeld(absl::Now() + kWait));
  queue.Add(1, past_the_mark, absl::Now() + kWait, record(1));  // queued behind it
  queue.Add(1, past_the_mark, absl::Now() + kWait, record(2));
  std::thread closing([&] { queue.Close(); });
  {
    // The queued calls are answered before the one in flight is released.
    absl::MutexLock l(&mu);
    auto refused = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return !answers[1].ok() && answers[1].status().code() != absl::StatusCode::kUnknown &&
             !answers[2].ok() && answers[2].status().code() != absl::StatusCode::kUnknown;
    };
    EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&refused), kWait));
    EXPECT_TRUE(absl::IsUnknown(answers[0].status()));
  }
  faulty_->ReleaseHeld();
  closing.join();
  ASSERT_TRUE(answers[0].ok()) << answers[0].status();
  EXPECT_EQ(answers[0]->value(), past_the_mark.value() + 1);
  for (int i : {1, 2}) {
    EXPECT_TRUE(absl::IsUnavailable(answers[i].status())) << answers[i].status();
    EXPECT_NE(answers[i].status().message().find("shutting down"), std::string::npos);
  }
  // After Close a call is answered at once, on the caller's thread.
  absl::StatusOr<TimeTick> late = absl::UnknownError("no answer");
  queue.Add(1, TimeTick(0), absl::Now() + kWait, [&](absl::StatusOr<TimeTick> t) { late = t; });
  EXPECT_TRUE(absl::IsUnavailable(late.status()));

  // A deadline that passed while queued: not served.
  OracleRaiseQueue fresh(oracle);
  absl::Notification answered;
  absl::StatusOr<TimeTick> expired = absl::UnknownError("no answer");
  fresh.Add(1, TimeTick(oracle->mark() + 1000), absl::Now() - absl::Seconds(1),
            [&](absl::StatusOr<TimeTick> t) {
              expired = t;
              answered.Notify();
            });
  ASSERT_TRUE(answered.WaitForNotificationWithTimeout(kWait));
  EXPECT_TRUE(absl::IsDeadlineExceeded(expired.status())) << expired.status();
}

TEST_F(CoordServiceTest, WithoutAnOracleTimestampsAreUnavailableButDiscoveryWorks) {
  AddNode(1);
  StartServer(/*with_oracle=*/false);
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  kingfisher::v1::AllocateTimestampsRequest req;
  req.set_count(1);
  kingfisher::v1::AllocateTimestampsResponse resp;
  grpc::Status s = stub_->AllocateTimestamps(&ctx, req, &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(s.error_message().find("not the coordinator"), std::string::npos);

  grpc::ClientContext wctx;
  SetDeadline(&wctx);
  auto reader = stub_->WatchAssignments(&wctx, {});
  AssignmentSnapshot last;
  EXPECT_TRUE(ReadUntil(
      reader.get(), [](const auto& s) { return AllOn(s, 1); }, &last));
  wctx.TryCancel();
}

TEST_F(CoordServiceTest, ShutdownEndsWatchStreamsWithOnShutdown) {
  StartServer(/*with_oracle=*/true);
  grpc::ClientContext ctx;
  SetDeadline(&ctx);
  auto reader = stub_->WatchAssignments(&ctx, {});
  AssignmentSnapshot s;
  ASSERT_TRUE(reader->Read(&s));
  server_->Shutdown(absl::Seconds(5));
  while (reader->Read(&s)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(CoordServiceTest, CancelledWatchersAreReleased) {
  StartServer(/*with_oracle=*/true);
  for (int i = 0; i < 20; ++i) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx);
    auto reader = stub_->WatchAssignments(&ctx, {});
    AssignmentSnapshot s;
    ASSERT_TRUE(reader->Read(&s));
    ctx.TryCancel();
    while (reader->Read(&s)) {
    }
    EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  }
  // Nothing left behind: shutdown does not wait for the grace period.
  const absl::Time start = absl::Now();
  server_->Shutdown(absl::Seconds(30));
  EXPECT_LT(absl::Now() - start, absl::Seconds(20));
}

}  // namespace
}  // namespace kf::rpc
