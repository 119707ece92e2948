// The Collections service over real gRPC loopback with the generated stub, on a DdlHost over an
// embedded store and a fake appender (src/streaming/ddl/testing).
#include "rpc/collection_service.h"

#include <gtest/gtest.h>

#include <thread>

#include "absl/strings/match.h"
#include "common/errors.h"
#include "grpcpp/grpcpp.h"
#include "rpc/rpc_server.h"
#include "streaming/coord/ddl_host.h"
#include "streaming/ddl/testing/ddl_test_util.h"
#include "trace/testing/scoped_in_memory_tracing.h"
#include "trace/traceparent.h"
#include "wire/status_convert.h"

namespace kf::rpc {
namespace {

namespace v1 = kingfisher::v1;

const std::vector<std::string> kPChannels = {"kf-dml_0", "kf-dml_1", "kf-dml_2"};

class CollectionServiceTest : public streaming::ddl::testing::DdlTest {
 protected:
  void SetUp() override {
    DdlTest::SetUp();
    streaming::DdlHost::Options o;
    o.pchannels = kPChannels;
    o.broadcaster.retry_backoff = absl::Milliseconds(1);
    o.broadcaster.retry_backoff_max = absl::Milliseconds(5);
    host_ = std::make_unique<streaming::DdlHost>(faulty_.get(), &appender_, o);
    host_->TakeOffice(revision_);
    ASSERT_TRUE(host_->WaitServing(Deadline()));
    StartServer(CollectionServiceOptions{.ddl = host_.get()});
  }
  void TearDown() override {
    appender_.Hold(false);
    if (server_ != nullptr) server_->Shutdown(absl::ZeroDuration());
    server_.reset();
    host_.reset();
    DdlTest::TearDown();
  }

  void StartServer(CollectionServiceOptions collections) {
    RpcServerOptions o;
    o.listen = "127.0.0.1:0";
    o.collections = collections;
    auto server = RpcServer::Start(std::move(o));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    stub_ = v1::Collections::NewStub(
        grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  }

  static std::unique_ptr<grpc::ClientContext> Ctx() {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(absl::ToChronoTime(Deadline()));
    return ctx;
  }
  static v1::CreateCollectionRequest CreateReq(const std::string& name, uint32_t dim = 4,
                                               v1::MetricType metric = v1::L2,
                                               uint32_t shards = 2) {
    v1::CreateCollectionRequest r;
    r.set_name(name);
    r.set_dim(dim);
    r.set_metric(metric);
    r.set_shards(shards);
    return r;
  }
  // The call's status as the client library reads it (streaming code from the details).
  absl::StatusOr<v1::CollectionInfo> Create(const v1::CreateCollectionRequest& r) {
    v1::CreateCollectionResponse resp;
    absl::Status s = wire::FromGrpcStatus(stub_->CreateCollection(Ctx().get(), r, &resp));
    if (!s.ok()) return s;
    return resp.collection();
  }
  absl::Status Drop(const std::string& name, bool no_wait = false) {
    v1::DropCollectionRequest r;
    r.set_name(name);
    r.mutable_options()->set_no_wait(no_wait);
    v1::DropCollectionResponse resp;
    return wire::FromGrpcStatus(stub_->DropCollection(Ctx().get(), r, &resp));
  }
  absl::StatusOr<v1::CollectionInfo> Describe(const std::string& name,
                                              const std::string& database = "") {
    v1::DescribeCollectionRequest r;
    r.set_database(database);
    r.set_name(name);
    v1::DescribeCollectionResponse resp;
    absl::Status s = wire::FromGrpcStatus(stub_->DescribeCollection(Ctx().get(), r, &resp));
    if (!s.ok()) return s;
    return resp.collection();
  }
  absl::StatusOr<std::vector<std::string>> List(const std::string& database = "") {
    v1::ListCollectionsRequest r;
    r.set_database(database);
    v1::ListCollectionsResponse resp;
    absl::Status s = wire::FromGrpcStatus(stub_->ListCollections(Ctx().get(), r, &resp));
    if (!s.ok()) return s;
    std::vector<std::string> names;
    for (const auto& c : resp.collections()) names.push_back(c.schema().name());
    return names;
  }
  absl::Status Partition(bool create, const std::string& collection, const std::string& partition) {
    v1::PartitionRequest r;
    r.set_collection(collection);
    r.set_partition(partition);
    v1::PartitionResponse resp;
    return wire::FromGrpcStatus(create ? stub_->CreatePartition(Ctx().get(), r, &resp)
                                       : stub_->DropPartition(Ctx().get(), r, &resp));
  }

  streaming::ddl::testing::FakeAppender appender_;
  std::unique_ptr<streaming::DdlHost> host_;
  std::unique_ptr<RpcServer> server_;
  std::unique_ptr<v1::Collections::Stub> stub_;
};

TEST_F(CollectionServiceTest, CreateDescribeListDropRoundTrip) {
  auto created = Create(CreateReq("orders", 8, v1::COSINE, 3));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->database(), "default");
  EXPECT_EQ(created->state(), v1::COLLECTION_CREATED);
  EXPECT_GT(created->schema().collection_id(), 0);
  EXPECT_EQ(created->schema().dim(), 8u);
  EXPECT_EQ(created->schema().metric(), v1::COSINE);
  ASSERT_EQ(created->schema().vchannels_size(), 3);
  for (const std::string& v : created->schema().vchannels()) {
    EXPECT_EQ(appender_.log(v).size(), 1u) << v;  // the CreateCollection copy
  }

  auto described = Describe("orders", "default");  // "" and "default" are one database
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->SerializeAsString(), created->SerializeAsString());
  ASSERT_TRUE(Create(CreateReq("users")).ok());
  EXPECT_EQ(*List(), (std::vector<std::string>{"orders", "users"}));
  EXPECT_TRUE(List("other")->empty());

  ASSERT_TRUE(Partition(true, "orders", "p2024").ok());
  EXPECT_EQ(Describe("orders")->partitions_size(), 2);
  ASSERT_TRUE(Partition(false, "orders", "p2024").ok());
  EXPECT_EQ(Describe("orders")->partitions_size(), 1);

  ASSERT_TRUE(Drop("orders").ok());
  EXPECT_EQ(GetStreamingCode(Describe("orders").status()), StreamingCode::kCollectionNotFound);
  EXPECT_EQ(*List(), std::vector<std::string>{"users"});
  for (const std::string& v : created->schema().vchannels()) {
    EXPECT_EQ(appender_.log(v).size(), 4u) << v;  // create, 2 partition DDL, drop
  }
}

TEST_F(CollectionServiceTest, BadInputIsRefusedWithTheRightCodeAndChangesNothing) {
  ASSERT_TRUE(Create(CreateReq("c")).ok());
  const auto before = Dump();
  const size_t appends = appender_.calls().size();

  auto dup = Create(CreateReq("c"));
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists) << dup.status();
  EXPECT_EQ(GetStreamingCode(dup.status()), StreamingCode::kCollectionExists);
  absl::Status unknown = Drop("nope");
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound) << unknown;
  EXPECT_EQ(GetStreamingCode(unknown), StreamingCode::kCollectionNotFound);

  const std::vector<std::pair<std::string, v1::CreateCollectionRequest>> invalid = {
      {"dim 0", CreateReq("d", 0)},
      {"dim 32769", CreateReq("d", 32769)},
      {"metric unspecified", CreateReq("d", 4, v1::METRIC_UNSPECIFIED)},
      {"metric out of range", CreateReq("d", 4, static_cast<v1::MetricType>(99))},
      {"shards 0", CreateReq("d", 4, v1::L2, 0)},
      {"shards 65", CreateReq("d", 4, v1::L2, 65)},
      {"bad name", CreateReq("1d")},
  };
  for (const auto& [what, req] : invalid) {
    auto r = Create(req);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << what << ": " << r.status();
    EXPECT_EQ(GetStreamingCode(r.status()), StreamingCode::kInvalidArgument) << what;
  }
  EXPECT_EQ(Partition(false, "c", "_default").code(), absl::StatusCode::kInvalidArgument);

  EXPECT_EQ(Dump(), before);
  EXPECT_EQ(appender_.calls().size(), appends);
  EXPECT_EQ(*List(), std::vector<std::string>{"c"});
}

TEST_F(CollectionServiceTest, NoWaitOnANameAnotherDdlHoldsIsAbortedWithResourceAcquired) {
  appender_.Hold(true);  // the first DDL stays in its broadcast, holding the name's lock
  absl::StatusOr<v1::CollectionInfo> first = absl::UnknownError("unset");
  std::thread t([&] { first = Create(CreateReq("c")); });
  ASSERT_TRUE(appender_.WaitCalls(2, Deadline()));

  v1::CreateCollectionRequest again = CreateReq("c");
  again.mutable_options()->set_no_wait(true);
  auto busy = Create(again);
  EXPECT_EQ(busy.status().code(), absl::StatusCode::kAborted) << busy.status();
  EXPECT_EQ(GetStreamingCode(busy.status()), StreamingCode::kResourceAcquired);
  absl::Status drop = Drop("c", /*no_wait=*/true);
  EXPECT_EQ(GetStreamingCode(drop), StreamingCode::kResourceAcquired) << drop;
  auto creating = Describe("c");  // reads take no lock
  ASSERT_TRUE(creating.ok()) << creating.status();
  EXPECT_EQ(creating->state(), v1::COLLECTION_CREATING);

  appender_.Hold(false);
  t.join();
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->state(), v1::COLLECTION_CREATED);
}

TEST_F(CollectionServiceTest, TraceparentIsTheParentOfTheBroadcast) {
  trace::testing::ScopedInMemoryTracing tracing;
  v1::CreateCollectionRequest req = CreateReq("traced");
  req.mutable_options()->set_traceparent("00-0102030405060708090a0b0c0d0e0f10-1112131415161718-01");
  ASSERT_TRUE(Create(req).ok());
  v1::CreateCollectionRequest malformed = CreateReq("untraced");
  malformed.mutable_options()->set_traceparent("00-not-a-trace-01");
  ASSERT_TRUE(Create(malformed).ok());

  auto broadcasts = tracing.SpansNamed("wal.broadcast");
  ASSERT_EQ(broadcasts.size(), 2u);
  const auto parent = trace::ParseTraceparent(req.options().traceparent());
  ASSERT_TRUE(parent.has_value());
  EXPECT_EQ(broadcasts[0].context.trace_id, parent->trace_id);
  EXPECT_EQ(broadcasts[0].parent_span_id, parent->span_id);
  EXPECT_TRUE(broadcasts[0].parent_remote);
  EXPECT_NE(broadcasts[1].context.trace_id, parent->trace_id);
  EXPECT_FALSE(broadcasts[1].parent_span_id.IsValid());  // a new trace
}

TEST_F(CollectionServiceTest, RefusesUnavailableWhenNotActingAndUnimplementedWithoutDdl) {
  host_->LeaveOffice();
  auto refused = Create(CreateReq("c"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(refused.status().message(), "not the acting coordinator");
  EXPECT_EQ(Describe("c").status().code(), absl::StatusCode::kUnavailable);

  server_->Shutdown(absl::ZeroDuration());
  StartServer({});  // a streaming node: no DDL host
  EXPECT_EQ(List().status().code(), absl::StatusCode::kUnimplemented);
}

TEST_F(CollectionServiceTest, CallsOverTheLimitAreRefusedWithResourceExhausted) {
  server_->Shutdown(absl::ZeroDuration());
  StartServer({.ddl = host_.get(), .max_calls = 1});
  appender_.Hold(true);
  absl::StatusOr<v1::CollectionInfo> first = absl::UnknownError("unset");
  std::thread t([&] { first = Create(CreateReq("c")); });
  ASSERT_TRUE(appender_.WaitCalls(2, Deadline()));
  auto refused = Describe("c");
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted) << refused.status();
  appender_.Hold(false);
  t.join();
  EXPECT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(Describe("c").ok());  // the worker is free again
}

// A DDL stuck in its broadcast past the shutdown grace ends with UNAVAILABLE (its task stays
// persisted for the next term) and no worker outlives Shutdown.
TEST_F(CollectionServiceTest, ShutdownEndsCallsStuckPastTheGraceWithUnavailable) {
  appender_.Hold(true);
  absl::StatusOr<v1::CollectionInfo> stuck = absl::UnknownError("unset");
  std::thread t([&] { stuck = Create(CreateReq("c")); });
  ASSERT_TRUE(appender_.WaitCalls(2, Deadline()));
  server_->Shutdown(absl::Milliseconds(50));
  t.join();
  EXPECT_EQ(stuck.status().code(), absl::StatusCode::kUnavailable) << stuck.status();
  EXPECT_TRUE(absl::StrContains(stuck.status().message(), "broadcaster stopped")) << stuck.status();
  EXPECT_EQ(host_->catalog().status().code(), absl::StatusCode::kUnavailable);
  auto task = store_->Get(keys_.broadcast_task(1), Deadline());
  ASSERT_TRUE(task.ok()) << task.status();  // persisted: the next coordinator completes it
}

}  // namespace
}  // namespace kf::rpc
