// Client's collection calls against FakeCollections (an in-process gRPC Collections and
// StreamingCoord service): request contents, status mapping, no retry, wait-for-ready bounded
// by the deadline, traceparent propagation.
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "client/fake_collections.h"
#include "client/fake_streaming_node.h"
#include "common/errors.h"
#include "gtest/gtest.h"
#include "kingfisher/client.h"
#include "trace/traceparent.h"

namespace kf::client {
namespace {

using kingfisher::CollectionSpec;
using kingfisher::DdlOptions;
using testing::FakeCollections;
using testing::FakeStreamingNode;
namespace v1 = kingfisher::v1;

class CollectionCallsTest : public ::testing::Test {
 protected:
  CollectionCallsTest() : node_("127.0.0.1:0", fake_.services()) {}

  std::unique_ptr<kingfisher::Client> Connect(kingfisher::ClientOptions o = {}) {
    o.endpoint = node_.endpoint();
    auto c = kingfisher::Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *std::move(c) : nullptr;
  }

  FakeCollections fake_;  // outlives the server that serves it
  FakeStreamingNode node_;
};

CollectionSpec Spec(std::string name = "orders") {
  return {.name = std::move(name), .dim = 4, .metric = "cosine", .shards = 3};
}

TEST_F(CollectionCallsTest, CreateDescribeListDrop) {
  auto client = Connect();
  auto created = client->CreateCollection(Spec());
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->id, 1);
  EXPECT_EQ(created->name, "orders");
  EXPECT_EQ(created->database, "default");
  EXPECT_EQ(created->dim, 4u);
  EXPECT_EQ(created->metric, "COSINE");
  EXPECT_EQ(created->shards, 3u);
  EXPECT_EQ(created->state, "CREATED");
  EXPECT_EQ(created->vchannels,
            (std::vector<std::string>{"kf-dml_0_1v0", "kf-dml_1_1v1", "kf-dml_2_1v2"}));
  ASSERT_EQ(created->partitions.size(), 1u);
  EXPECT_EQ(created->partitions[0].name, "_default");

  auto calls = fake_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].method, "CreateCollection");
  EXPECT_EQ(calls[0].database, "default");
  EXPECT_EQ(calls[0].create.metric(), v1::COSINE);
  EXPECT_EQ(calls[0].create.dim(), 4u);
  EXPECT_EQ(calls[0].create.shards(), 3u);
  EXPECT_FALSE(calls[0].options.no_wait());
  EXPECT_EQ(calls[0].options.traceparent(), "");  // no caller context

  auto described = client->DescribeCollection("orders");
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->vchannels, created->vchannels);
  ASSERT_TRUE(client->CreateCollection(Spec("users")).ok());
  auto list = client->ListCollections();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].name, "orders");
  EXPECT_EQ((*list)[1].name, "users");

  EXPECT_TRUE(client->DropCollection("orders").ok());
  auto gone = client->DescribeCollection("orders");
  EXPECT_EQ(gone.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(GetStreamingCode(gone.status()), StreamingCode::kCollectionNotFound);
  absl::Status again = client->DropCollection("orders");
  EXPECT_EQ(again.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(GetStreamingCode(again), StreamingCode::kCollectionNotFound);
}

TEST_F(CollectionCallsTest, AlreadyExistsKeepsItsStreamingCode) {
  auto client = Connect();
  ASSERT_TRUE(client->CreateCollection(Spec()).ok());
  auto dup = client->CreateCollection(Spec());
  EXPECT_EQ(dup.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(GetStreamingCode(dup.status()), StreamingCode::kCollectionExists);
  EXPECT_NE(dup.status().message().find("collection 'orders' exists"), std::string::npos)
      << dup.status();
}

TEST_F(CollectionCallsTest, ResourceAcquiredWithNoWaitIsAbortedAndNotRetried) {
  auto client = Connect();
  fake_.FailWith(StreamingError(StreamingCode::kResourceAcquired, "collection orders is locked"));
  auto r = client->CreateCollection(Spec(), DdlOptions{.no_wait = true});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kAborted);
  EXPECT_EQ(GetStreamingCode(r.status()), StreamingCode::kResourceAcquired);
  auto calls = fake_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_TRUE(calls[0].options.no_wait());
}

TEST_F(CollectionCallsTest, UnavailableDdlIsNotRetried) {
  auto client = Connect();
  fake_.FailWith(StreamingError(StreamingCode::kOnShutdown, "not the acting coordinator"));
  absl::Status s = client->DropCollection("orders");
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("may or may not have been applied"), std::string::npos) << s;
  EXPECT_NE(s.message().find("not the acting coordinator"), std::string::npos) << s;
  EXPECT_EQ(fake_.calls().size(), 1u);
}

// A read changes nothing: one that fails UNAVAILABLE (a server restarting under it) is sent
// again until answered, within its deadline.
TEST_F(CollectionCallsTest, UnavailableReadIsSentAgain) {
  auto client = Connect();
  ASSERT_TRUE(client->CreateCollection(Spec()).ok());
  fake_.FailWith(absl::UnavailableError("recvmsg:Connection reset by peer"), "DescribeCollection",
                 /*times=*/2);
  auto info = client->DescribeCollection("orders");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->name, "orders");
  int describes = 0;
  for (const auto& call : fake_.calls()) describes += call.method == "DescribeCollection";
  EXPECT_EQ(describes, 3);
  // A server's own UNAVAILABLE (not the acting coordinator) is answered at once.
  fake_.FailWith(StreamingError(StreamingCode::kOnShutdown, "not the acting coordinator"),
                 "DescribeCollection", /*times=*/1);
  EXPECT_EQ(client->DescribeCollection("orders").status().code(), absl::StatusCode::kUnavailable);
  describes = 0;
  for (const auto& call : fake_.calls()) describes += call.method == "DescribeCollection";
  EXPECT_EQ(describes, 4);
  // Past the deadline the last failure is the answer.
  fake_.FailWith(absl::UnavailableError("still down"), "ListCollections");
  auto listed = Connect({.status_timeout = std::chrono::milliseconds(300)})->ListCollections();
  EXPECT_EQ(listed.status().code(), absl::StatusCode::kUnavailable) << listed.status();
}

TEST_F(CollectionCallsTest, BadArgumentsAreNeverSent) {
  auto client = Connect();
  auto code = [](const absl::Status& s) { return s.code(); };
  const absl::StatusCode kInvalid = absl::StatusCode::kInvalidArgument;
  CollectionSpec bad_metric = Spec();
  bad_metric.metric = "HAMMING";
  EXPECT_EQ(code(client->CreateCollection(bad_metric).status()), kInvalid);
  CollectionSpec bad_dim = Spec();
  bad_dim.dim = 0;
  EXPECT_EQ(code(client->CreateCollection(bad_dim).status()), kInvalid);
  EXPECT_EQ(code(client->DropCollection("no-dashes")), kInvalid);
  EXPECT_EQ(code(client->DescribeCollection("").status()), kInvalid);
  EXPECT_EQ(code(client->CreatePartition("orders", "9p")), kInvalid);
  EXPECT_EQ(code(client->DropPartition("orders", "_default")), kInvalid);
  EXPECT_EQ(code(client->AllocateIds(0).status()), kInvalid);
  EXPECT_EQ(code(client->AllocateIds(65537).status()), kInvalid);
  EXPECT_TRUE(fake_.calls().empty());

  auto bad_db = Connect({.database = "a/b"});
  EXPECT_EQ(code(bad_db->ListCollections().status()), kInvalid);
  EXPECT_TRUE(fake_.calls().empty());
}

TEST_F(CollectionCallsTest, DatabaseIsSent) {
  auto client = Connect({.database = "analytics"});
  ASSERT_TRUE(client->ListCollections().ok());
  auto calls = fake_.calls();
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].method, "ListCollections");
  EXPECT_EQ(calls[0].database, "analytics");
}

TEST_F(CollectionCallsTest, Partitions) {
  auto client = Connect();
  ASSERT_TRUE(client->CreateCollection(Spec()).ok());
  EXPECT_TRUE(client->CreatePartition("orders", "p1").ok());
  EXPECT_EQ(client->CreatePartition("orders", "p1").code(), absl::StatusCode::kAlreadyExists);
  auto info = client->DescribeCollection("orders");
  ASSERT_TRUE(info.ok());
  ASSERT_EQ(info->partitions.size(), 2u);
  EXPECT_EQ(info->partitions[1].name, "p1");
  EXPECT_TRUE(client->DropPartition("orders", "p1").ok());
  EXPECT_EQ(client->DropPartition("orders", "p1").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client->CreatePartition("nope", "p1").code(), absl::StatusCode::kNotFound);
  auto calls = fake_.calls();
  EXPECT_EQ(calls.back().method, "CreatePartition");
  EXPECT_EQ(calls.back().name, "nope");
  EXPECT_EQ(calls.back().partition, "p1");
}

TEST_F(CollectionCallsTest, TraceparentOfTheCallersContextIsSent) {
  auto client = Connect();
  DdlOptions o;
  o.trace = *kingfisher::TraceContext::FromTraceparent(
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  ASSERT_TRUE(client->CreateCollection(Spec(), o).ok());
  ASSERT_TRUE(client->DropCollection("orders", o).ok());
  auto calls = fake_.calls();
  ASSERT_EQ(calls.size(), 2u);
  for (const auto& c : calls) {
    EXPECT_EQ(c.options.traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
        << c.method;
  }
}

TEST_F(CollectionCallsTest, DdlDeadlineIsHonoured) {
  auto client = Connect();
  ASSERT_TRUE(client->ListCollections().ok());  // connected
  fake_.Hold();
  const kingfisher::Deadline deadline = kingfisher::Clock::now() + std::chrono::milliseconds(300);
  auto r = client->CreateCollection(Spec(), DdlOptions{.deadline = deadline});
  fake_.Release();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_NE(r.status().message().find("may or may not have been applied"), std::string::npos)
      << r.status();
  auto calls = fake_.calls();
  ASSERT_EQ(calls.size(), 2u);
  // The server saw the caller's deadline (gRPC sends it as a timeout: allow its rounding).
  EXPECT_LE(calls[1].deadline, absl::FromChrono(deadline) + absl::Milliseconds(20));
  EXPECT_GE(calls[1].deadline, absl::FromChrono(deadline) - absl::Seconds(1));
}

TEST_F(CollectionCallsTest, DefaultDeadlinesComeFromTheClientOptions) {
  auto client = Connect(
      {.status_timeout = std::chrono::seconds(20), .ddl_timeout = std::chrono::seconds(200)});
  const absl::Time before = absl::Now();
  ASSERT_TRUE(client->CreateCollection(Spec()).ok());
  ASSERT_TRUE(client->DescribeCollection("orders").ok());
  ASSERT_TRUE(client->AllocateIds(1).ok());
  const absl::Time after = absl::Now();
  auto calls = fake_.calls();
  ASSERT_EQ(calls.size(), 3u);
  // gRPC sends the deadline as a timeout of limited precision: allow a few seconds.
  const absl::Duration slack = absl::Seconds(5);
  EXPECT_GE(calls[0].deadline, before + absl::Seconds(200) - slack);
  EXPECT_LE(calls[0].deadline, after + absl::Seconds(200) + slack);
  for (int i : {1, 2}) {
    EXPECT_GE(calls[i].deadline, before + absl::Seconds(20) - slack) << calls[i].method;
    EXPECT_LE(calls[i].deadline, after + absl::Seconds(20) + slack) << calls[i].method;
  }
}

TEST(CollectionCallsUnreachableTest, UnavailableAndNothingSentWhenTheEndpointIsDown) {
  // Port 1 on loopback: nothing listens there (binding it needs root).
  auto client = kingfisher::Client::Connect(
      {.endpoint = "127.0.0.1:1", .status_timeout = std::chrono::milliseconds(200)});
  ASSERT_TRUE(client.ok());
  auto list = (*client)->ListCollections();
  EXPECT_EQ(list.status().code(), absl::StatusCode::kUnavailable) << list.status();
  EXPECT_NE(list.status().message().find("unreachable, nothing was sent"), std::string::npos)
      << list.status();
  absl::Status drop = (*client)->DropCollection(
      "orders", DdlOptions{.deadline = kingfisher::Clock::now() + std::chrono::milliseconds(200)});
  EXPECT_EQ(drop.code(), absl::StatusCode::kUnavailable) << drop;
  EXPECT_EQ(GetStreamingCode(drop), StreamingCode::kTransport);
}

TEST(CollectionCallsUnimplementedTest, AnEndpointWithoutCollectionsSaysSo) {
  FakeStreamingNode node;  // a plain node: no Collections, no StreamingCoord
  auto client = kingfisher::Client::Connect({.endpoint = node.endpoint()});
  ASSERT_TRUE(client.ok());
  auto list = (*client)->ListCollections();
  EXPECT_EQ(list.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(list.status().message().rfind("ListCollections: not served by " + node.endpoint(), 0),
            0u)
      << list.status();
  EXPECT_EQ((*client)->AllocateIds(1).status().code(), absl::StatusCode::kUnimplemented);
}

TEST_F(CollectionCallsTest, AllocateIdsAreTheCoordinatorsTimestamps) {
  auto client = Connect();
  fake_.SetNextTimestamp(470795705276170240);
  auto ids = client->AllocateIds(3);
  ASSERT_TRUE(ids.ok()) << ids.status();
  EXPECT_EQ(*ids,
            (std::vector<int64_t>{470795705276170240, 470795705276170241, 470795705276170242}));
  auto more = client->AllocateIds(2);
  ASSERT_TRUE(more.ok());
  EXPECT_EQ((*more)[0], 470795705276170243);
  auto calls = fake_.calls();
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(calls[0].method, "AllocateTimestamps");
  EXPECT_EQ(calls[0].count, 3u);
}

TEST_F(CollectionCallsTest, AllocateIdsRejectsAMalformedAnswer) {
  auto client = Connect();
  fake_.AnswerTimestampCount(2);
  EXPECT_EQ(client->AllocateIds(3).status().code(), absl::StatusCode::kInternal);
  fake_.AnswerTimestampCount(0);
  // Ids must fit an int64: the last of the range would not.
  fake_.SetNextTimestamp(static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(client->AllocateIds(2).status().code(), absl::StatusCode::kInternal);
  fake_.SetNextTimestamp(static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  auto last = client->AllocateIds(1);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ((*last)[0], std::numeric_limits<int64_t>::max());
}

TEST_F(CollectionCallsTest, AllocateIdsOnANodeIsUnavailable) {
  auto client = Connect();
  fake_.FailWith(StreamingError(StreamingCode::kTransport, "AllocateTimestamps: not coordinator"));
  auto r = client->AllocateIds(1);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(r.status().message().find("may or may not"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace kf::client
