#include <chrono>
#include <future>
#include <set>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "client/client_internal.h"
#include "client/fake_streaming_node.h"
#include "client/producer_impl.h"
#include "common/errors.h"
#include "gtest/gtest.h"
#include "kingfisher/client.h"
#include "message/message_trace.h"
#include "trace/public_context.h"
#include "trace/testing/scoped_in_memory_tracing.h"

namespace kf::client {
namespace {

using kingfisher::AppendResult;
using testing::ConnectTo;
using testing::FakeStreamingNode;
using testing::SentMessage;
namespace v1 = kingfisher::v1;

kingfisher::Message Insert(std::string vchannel, std::string payload) {
  return kingfisher::Message{
      .type = MessageType::kInsert, .vchannel = std::move(vchannel), .payload = std::move(payload)};
}

std::string Ik(const v1::ProduceRequest& r) {
  return std::string(SentMessage(r).idempotency_key().value_or(""));
}

v1::Error MakeError(StreamingCode code) { return testing::MakeWireError(code); }

TEST(ProducerTest, RetryAfterAmbiguousFailureCarriesTheSameKey) {
  FakeStreamingNode node;
  node.FailStreamsAfterAppend(1);
  auto client = ConnectTo(node);
  auto producer = *client->CreateProducer();
  auto r = producer->AppendSync(Insert("kf-dml_0_orders", "a"));
  ASSERT_TRUE(r.ok()) << r.status();

  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(Ik(reqs[0]), Ik(reqs[1]));
  EXPECT_EQ(Ik(reqs[0]), producer->producer_id() + ":1");
  EXPECT_NE(reqs[0].entries(0).id(), reqs[1].entries(0).id());
  EXPECT_EQ(reqs[0].pchannel(), "kf-dml_0");
  EXPECT_EQ(node.produce_streams(), 2);
  // Appended once; the retry got the original result.
  ASSERT_EQ(node.appended().size(), 1u);
  EXPECT_EQ(r->id, MessageId::Local(1));
  EXPECT_EQ(r->timetick, TimeTick(1001));
  EXPECT_EQ(r->last_confirmed, MessageId::Local(1));
  EXPECT_FALSE(r->txn_id.has_value());
}

TEST(ProducerTest, StampsVersionTypeVChannelAndIncreasingKeys) {
  FakeStreamingNode node;
  auto client = ConnectTo(node);
  auto producer = *client->CreateProducer();
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(producer->AppendSync(Insert("kf-dml_1_orders", "x")).ok());
  }
  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const MutableMessage sent = SentMessage(reqs[i]);
    const Properties& p = sent.properties();
    EXPECT_EQ(p.at("_ik"), producer->producer_id() + ":" + std::to_string(i + 1));
    EXPECT_EQ(p.at("_v"), "2");
    EXPECT_EQ(p.at("_t"), "2");
    EXPECT_EQ(p.at("_vc"), "kf-dml_1_orders");
    EXPECT_EQ(reqs[i].pchannel(), "kf-dml_1");
  }
  auto other = *client->CreateProducer();
  EXPECT_NE(other->producer_id(), producer->producer_id());
}

// The broadcaster's copies go through the producer's AppendMessage (client_internal.h).
TEST(ProducerTest, ABroadcastCopyKeepsTheBroadcastersKey) {
  FakeStreamingNode node;
  auto client = ConnectTo(node);
  std::unique_ptr<ProducerImpl> producer = NewProducer(*client);
  kingfisher::v1::DropCollection drop;
  drop.set_collection_id(7);
  MutableMessage m(MessageType::kDropCollection, drop.SerializeAsString());
  m.set_vchannel("kf-dml_0_7v0");
  kingfisher::v1::BroadcastHeader h;
  h.set_broadcast_id(42);
  h.add_vchannels("kf-dml_0_7v0");
  m.set_broadcast_header(h);
  m.set_idempotency_key("bc42:1");
  ASSERT_TRUE(producer->AppendMessageSync(std::move(m), absl::InfinitePast(), {}).ok());
  // Without a broadcast header a caller's key is replaced by the producer's.
  ASSERT_TRUE(producer->AppendSync(Insert("kf-dml_0_orders", "x")).ok());
  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(Ik(reqs[0]), "bc42:1");
  EXPECT_EQ(Ik(reqs[1]), producer->producer_id() + ":2");
}

class NonRetryableTest : public ::testing::TestWithParam<StreamingCode> {};

TEST_P(NonRetryableTest, FailsAtOnce) {
  FakeStreamingNode node;
  const StreamingCode code = GetParam();
  node.SetErrorInjector([code](const v1::ProduceRequest&) { return MakeError(code); });
  auto client = ConnectTo(node);
  auto producer = *client->CreateProducer();
  auto r = producer->AppendSync(Insert("kf-dml_0_orders", "a"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ToStatusCode(GetParam()));
  EXPECT_EQ(GetStreamingCode(r.status()), GetParam());
  EXPECT_EQ(node.produce_requests().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(
    Codes, NonRetryableTest,
    ::testing::Values(StreamingCode::kInvalidArgument, StreamingCode::kInvalidTransactionState,
                      StreamingCode::kCollectionNotFound, StreamingCode::kDataLoss,
                      StreamingCode::kTransactionExpired, StreamingCode::kResourceAcquired));

class RetryableTest : public ::testing::TestWithParam<StreamingCode> {};

TEST_P(RetryableTest, RetriedWithTheSameKeyUntilSuccess) {
  FakeStreamingNode node;
  auto failures = std::make_shared<std::atomic<int>>(2);
  const StreamingCode code = GetParam();
  node.SetErrorInjector([failures, code](const v1::ProduceRequest&) -> std::optional<v1::Error> {
    if (failures->fetch_sub(1) > 0) return MakeError(code);
    return std::nullopt;
  });
  auto client = ConnectTo(node);
  auto producer = *client->CreateProducer();
  auto r = producer->AppendSync(Insert("kf-dml_0_orders", "a"));
  ASSERT_TRUE(r.ok()) << r.status();
  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(Ik(reqs[0]), Ik(reqs[2]));
  EXPECT_EQ(node.appended().size(), 1u);
}

INSTANTIATE_TEST_SUITE_P(Codes, RetryableTest,
                         ::testing::Values(StreamingCode::kChannelFenced,
                                           StreamingCode::kChannelNotExist,
                                           StreamingCode::kUnmatchedChannelTerm,
                                           StreamingCode::kOnShutdown,
                                           StreamingCode::kRateLimited));

TEST(ProducerTest, RetriesStopAtMaxAttemptsAndSayMaybeAppended) {
  FakeStreamingNode node;
  node.SetErrorInjector(
      [](const v1::ProduceRequest&) { return MakeError(StreamingCode::kOnShutdown); });
  auto client = ConnectTo(node, /*max_attempts=*/3);
  auto producer = *client->CreateProducer();
  auto r = producer->AppendSync(Insert("kf-dml_0_orders", "a"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(r.status().message().find("may or may not have been appended"), absl::string_view::npos)
      << r.status();
  EXPECT_EQ(node.produce_requests().size(), 3u);
}

TEST(ProducerTest, DeadlineBoundsRetries) {
  FakeStreamingNode node;
  node.SetErrorInjector(
      [](const v1::ProduceRequest&) { return MakeError(StreamingCode::kChannelFenced); });
  auto client = ConnectTo(node);
  auto producer = *client->CreateProducer();
  kingfisher::AppendOptions o;
  o.deadline = kingfisher::Clock::now() + std::chrono::milliseconds(200);
  auto r = producer->AppendSync(Insert("kf-dml_0_orders", "a"), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_GE(node.produce_requests().size(), 1u);
}

TEST(ProducerTest, ResponsesOutOfOrderAreMatchedByRequestId) {
  FakeStreamingNode node;
  node.AnswerInReverseBatchesOf(4);
  auto client = ConnectTo(node);
  // Four requests may await answers, so the four messages reach the node before any answer.
  auto producer = *client->CreateProducer({.batching = {.max_inflight_requests = 4}});
  std::vector<std::future<absl::StatusOr<AppendResult>>> futures;
  for (int i = 0; i < 4; ++i) {
    futures.push_back(producer->Append(Insert("kf-dml_0_orders", "payload-" + std::to_string(i))));
  }
  std::set<MessageId> ids;
  for (int i = 0; i < 4; ++i) {
    auto r = futures[i].get();
    ASSERT_TRUE(r.ok()) << r.status();
    auto appended = node.appended();
    ASSERT_GE(appended.size(), r->id.entry());
    EXPECT_EQ(appended[r->id.entry() - 1].payload(), "payload-" + std::to_string(i));
    ids.insert(r->id);
  }
  EXPECT_EQ(ids.size(), 4u);
}

// While max_inflight_requests requests await answers, new messages queue and leave together in
// the next request as soon as one is answered; each is still acknowledged on its own.
TEST(ProducerTest, MessagesQueuedWhileRequestsAwaitAnswersGoOutAsOneRequest) {
  FakeStreamingNode node;
  auto client = ConnectTo(node);
  auto producer = *client->CreateProducer({.batching = {.max_inflight_requests = 2}});
  ASSERT_TRUE(producer->AppendSync(Insert("kf-dml_0_orders", "warm-up")).ok());  // a live stream

  absl::Notification m0_arrived, release;
  node.SetErrorInjector(
      [&m0_arrived, &release](const v1::ProduceRequest& r) -> std::optional<v1::Error> {
        if (SentMessage(r).payload() == "m-0") {
          m0_arrived.Notify();
          release.WaitForNotification();
        }
        return std::nullopt;
      });
  std::vector<std::future<absl::StatusOr<AppendResult>>> futures;
  // m-0 first, alone at the node before the rest are appended: the reader thread may still
  // hold the stream's writes for the warm-up's callbacks (ProduceStream::Answered), and would
  // then send m-0 with whatever queued meanwhile.
  futures.push_back(producer->Append(Insert("kf-dml_0_orders", "m-0")));
  m0_arrived.WaitForNotification();
  for (int i = 1; i < 10; ++i) {
    futures.push_back(producer->Append(Insert("kf-dml_0_orders", "m-" + std::to_string(i))));
  }
  release.Notify();  // m-0 and m-1 went out alone; m-2..m-9 wait on the client
  for (int i = 0; i < 10; ++i) {
    auto r = futures[i].get();
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
  }
  // {1, 1, 9}: the reader thread sent m-0 (see above) and had not let go of the stream's writes
  // when m-1 was appended, so m-1 waited with the rest (a descheduled reader, seen under ASan on
  // a loaded machine). Either way m-0 went alone and the rest left together.
  const std::vector<int> sizes = node.batch_sizes();
  EXPECT_TRUE(sizes == (std::vector<int>{1, 1, 1, 8}) || sizes == (std::vector<int>{1, 1, 9}))
      << ::testing::PrintToString(sizes);
  std::vector<std::string> payloads;
  for (const MutableMessage& m : node.appended()) payloads.push_back(m.payload());
  ASSERT_EQ(payloads.size(), 11u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(payloads[i + 1], "m-" + std::to_string(i));
}

TEST(ProducerTest, BatchingBoundsBelowOneAreInvalid) {
  FakeStreamingNode node;
  auto client = ConnectTo(node);
  for (kingfisher::BatchingOptions b : {kingfisher::BatchingOptions{.max_inflight_requests = 0},
                                        kingfisher::BatchingOptions{.max_messages = 0},
                                        kingfisher::BatchingOptions{.max_bytes = 0}}) {
    auto p = client->CreateProducer({.batching = b});
    EXPECT_TRUE(absl::IsInvalidArgument(p.status())) << p.status();
  }
}

// A broken stream fails everything in flight on it; the retries go out in the producer's order,
// before anything appended after them, so the log keeps that order.
TEST(ProducerTest, RetriesKeepTheOrderOfAPChannel) {
  FakeStreamingNode node;
  node.FailStreamsAfterAppend(2);  // the first two streams append their first request and break
  auto client = ConnectTo(node);
  auto producer = *client->CreateProducer();
  std::vector<std::future<absl::StatusOr<AppendResult>>> futures;
  for (int i = 0; i < 50; ++i) {
    futures.push_back(producer->Append(Insert("kf-dml_0_orders", "m-" + std::to_string(i))));
  }
  for (int i = 0; i < 50; ++i) {
    auto r = futures[i].get();
    ASSERT_TRUE(r.ok()) << i << ": " << r.status();
  }
  std::vector<std::string> payloads;
  for (const MutableMessage& m : node.appended()) payloads.push_back(m.payload());
  ASSERT_EQ(payloads.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(payloads[i], "m-" + std::to_string(i));
  EXPECT_GE(node.produce_streams(), 3);
}

TEST(ProducerTest, BadMessagesFailWithoutBeingSent) {
  FakeStreamingNode node;
  auto client = ConnectTo(node);
  auto producer = *client->CreateProducer();
  auto no_vchannel = producer->AppendSync(Insert("", "x"));
  EXPECT_EQ(no_vchannel.status().code(), absl::StatusCode::kInvalidArgument);
  auto bad_vchannel = producer->AppendSync(Insert("orders", "x"));
  EXPECT_EQ(bad_vchannel.status().code(), absl::StatusCode::kInvalidArgument);
  kingfisher::Message untyped{.vchannel = "kf-dml_0_orders"};
  EXPECT_EQ(producer->AppendSync(untyped).status().code(), absl::StatusCode::kInvalidArgument);
  // A user may not set the system's keys: nothing is sent.
  kingfisher::Message reserved = Insert("kf-dml_0_orders", "x");
  reserved.properties.insert_or_assign("_ik", "forged:1");
  absl::Status forged = producer->AppendSync(reserved).status();
  EXPECT_EQ(forged.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(forged.message().find("'_ik' is reserved"), absl::string_view::npos) << forged;
  kingfisher::Message user = Insert("kf-dml_0_orders", "x");
  user.properties.insert_or_assign("origin", "sensor-7");
  ASSERT_TRUE(producer->AppendSync(user).ok());
  ASSERT_EQ(node.produce_requests().size(), 1u);
  EXPECT_EQ(SentMessage(node.produce_requests()[0]).GetProperty("origin"), "sensor-7");
  producer->Close();
  EXPECT_EQ(producer->AppendSync(Insert("kf-dml_0_orders", "x")).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(ProducerTest, EveryAttemptLostExhaustsRetriesAmbiguously) {
  FakeStreamingNode node;
  node.FailStreamsAfterAppend(100);
  auto client = ConnectTo(node, /*max_attempts=*/3);
  auto producer = *client->CreateProducer();
  auto r = producer->AppendSync(Insert("kf-dml_0_orders", "a"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_NE(r.status().message().find("may or may not have been appended"), absl::string_view::npos)
      << r.status();
  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(Ik(reqs[0]), Ik(reqs[2]));
  EXPECT_EQ(node.appended().size(), 1u);  // the WAL deduplicated the retries
}

TEST(ProducerTest, UnreachableServerFailsAmbiguously) {
  std::string endpoint;
  {
    FakeStreamingNode gone;
    endpoint = gone.endpoint();
  }
  kingfisher::ClientOptions o;
  o.endpoint = endpoint;
  o.retry.initial_backoff = std::chrono::milliseconds(1);
  o.retry.max_backoff = std::chrono::milliseconds(5);
  o.retry.max_attempts = 3;
  // Normally refused at once; should anything else answer on the freed port, attempts time out.
  o.attempt_timeout = std::chrono::milliseconds(300);
  auto client = *kingfisher::Client::Connect(o);
  auto producer = *client->CreateProducer();
  auto r = producer->AppendSync(Insert("kf-dml_0_orders", "a"));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsAmbiguous(r.status())) << r.status();
  EXPECT_NE(r.status().message().find("may or may not have been appended"), absl::string_view::npos)
      << r.status();
}

// AppendAsync never waits for the connection on the caller's thread: with attempts that would
// wait an hour for an unreachable server, the calls still return, and Close ends them.
TEST(ProducerTest, AppendAsyncDoesNotBlockWhileTheServerIsUnreachable) {
  std::string endpoint;
  {
    FakeStreamingNode gone;
    endpoint = gone.endpoint();
  }
  kingfisher::ClientOptions o;
  o.endpoint = endpoint;
  o.append_timeout = std::chrono::hours(1);
  o.attempt_timeout = std::chrono::hours(1);
  auto client = *kingfisher::Client::Connect(o);
  auto producer = *client->CreateProducer();
  std::vector<std::future<absl::StatusOr<AppendResult>>> pending;
  for (int i = 0; i < 5; ++i) pending.push_back(producer->Append(Insert("kf-dml_0_orders", "x")));
  producer->Close();
  for (auto& f : pending) {
    auto r = f.get();
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kCancelled) << r.status();
  }
}

// A server restart: once the channel has failed to connect it stays in TRANSIENT_FAILURE until
// a new connection is READY, and with the sync API nothing polls that reconnect unless a call
// waits for it. A fail-fast first attempt after the restart therefore failed at once (and the
// reconnect stalled until gRPC's 5 s backup poll); with wait-for-ready the single attempt
// waits for the connection and succeeds.
TEST(ProducerTest, FirstAttemptAfterAServerRestartWaitsForTheConnection) {
  auto first = std::make_unique<FakeStreamingNode>();
  const std::string endpoint = first->endpoint();
  kingfisher::ClientOptions o;
  o.endpoint = endpoint;
  o.retry.max_attempts = 1;
  o.attempt_timeout = std::chrono::seconds(60);  // bounds the test only if the fix is broken
  auto client = *kingfisher::Client::Connect(o);
  {
    auto connected = *client->CreateProducer();
    ASSERT_TRUE(connected->AppendSync(Insert("kf-dml_0_orders", "before")).ok());
  }  // (its stream is closed, so the server stops at once)

  first.reset();  // the server goes away; the channel fails to reconnect while it is down
  auto producer = *client->CreateProducer();
  kingfisher::AppendOptions soon;
  soon.deadline = kingfisher::Clock::now() + std::chrono::milliseconds(300);
  auto down = producer->AppendSync(Insert("kf-dml_0_orders", "down"), soon);
  ASSERT_FALSE(down.ok());
  EXPECT_TRUE(IsAmbiguous(down.status())) << down.status();

  FakeStreamingNode second(endpoint);  // back on the same address
  auto r = producer->AppendSync(Insert("kf-dml_0_orders", "after"));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(second.appended().size(), 1u);
  EXPECT_EQ(second.appended()[0].payload(), "after");
  producer->Close();
}

// docs/tracing.md §8 scenarios 6 and 9: wal.autocommit under the caller, one wal.dist_append per
// attempt as its child, and the sent `_tc` is the attempt's span.
TEST(ProducerTest, TracesAutocommitAndDistAppendPerAttempt) {
  trace::testing::ScopedInMemoryTracing tracing;
  FakeStreamingNode node;
  node.FailStreamsAfterAppend(1);
  auto client = ConnectTo(node);
  auto producer = *client->CreateProducer();
  auto [caller, caller_span] = trace::WalTracer()->StartSpan(trace::Context(), "request");
  kingfisher::Message m = Insert("kf-dml_0_orders", "a");
  m.trace = trace::ToPublic(caller.span_context());
  ASSERT_TRUE(producer->AppendSync(std::move(m)).ok());
  caller_span->End();

  auto autocommit = tracing.SpansNamed("wal.autocommit");
  ASSERT_EQ(autocommit.size(), 1u);
  EXPECT_EQ(autocommit[0].kind, trace::SpanKind::kProducer);
  EXPECT_EQ(autocommit[0].parent_span_id, caller_span->context().span_id);
  EXPECT_EQ(autocommit[0].context.trace_id, caller_span->context().trace_id);
  EXPECT_EQ(std::get<std::string>(autocommit[0].attributes.at("message.type")), "Insert");

  auto dist = tracing.SpansNamed("wal.dist_append");
  ASSERT_EQ(dist.size(), 2u);  // one per attempt
  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(dist[i].kind, trace::SpanKind::kProducer);
    EXPECT_EQ(dist[i].parent_span_id, autocommit[0].context.span_id);
    MutableMessage sent = SentMessage(reqs[i]);
    trace::SpanContext sc = ExtractTraceContext(trace::Context(), sent).span_context();
    bool matches_some = false;
    for (auto& d : dist) matches_some |= (d.context.span_id == sc.span_id);
    EXPECT_TRUE(matches_some) << "the sent _tc must be a wal.dist_append span";
    EXPECT_EQ(sc.trace_id, caller_span->context().trace_id);
  }
  EXPECT_NE(dist[0].status, dist[1].status);  // the failed attempt recorded its error
  for (auto& s : tracing.Spans()) {
    EXPECT_TRUE(s.name == "wal.autocommit" || s.name == "wal.dist_append" || s.name == "request")
        << s.name;
  }
}

// docs/tracing.md §8 scenario 6 (§5 "Remote producer"): without a caller context wal.autocommit
// is the root of a new trace, and the `_tc` each network attempt sends is exactly that attempt's
// wal.dist_append (trace id, span id and flags), never wal.autocommit's own context.
TEST(ProducerTest, EachAttemptSendsTheContextOfItsOwnDistAppend) {
  trace::testing::ScopedInMemoryTracing tracing;
  FakeStreamingNode node;
  node.FailStreamsAfterAppend(1);  // attempt 1 is lost with its stream, attempt 2 is answered
  auto client = ConnectTo(node);
  auto producer = *client->CreateProducer();
  ASSERT_TRUE(producer->AppendSync(Insert("kf-dml_0_orders", "a")).ok());

  auto autocommit = tracing.SpansNamed("wal.autocommit");
  ASSERT_EQ(autocommit.size(), 1u);
  EXPECT_FALSE(autocommit[0].parent_span_id.IsValid()) << "wal.autocommit is the root";
  auto dist = tracing.SpansNamed("wal.dist_append");
  ASSERT_EQ(dist.size(), 2u);
  // The lost attempt recorded its error, the answered one did not: that tells them apart.
  const trace::SpanData* lost = nullptr;
  const trace::SpanData* answered = nullptr;
  for (const trace::SpanData& d : dist) {
    (d.status == trace::SpanStatusCode::kError ? lost : answered) = &d;
    EXPECT_EQ(d.parent_span_id, autocommit[0].context.span_id);
    EXPECT_EQ(d.context.trace_id, autocommit[0].context.trace_id);
  }
  ASSERT_TRUE(lost != nullptr && answered != nullptr);
  auto reqs = node.produce_requests();
  ASSERT_EQ(reqs.size(), 2u);
  const trace::SpanData* attempts[] = {lost, answered};
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE("attempt " + std::to_string(i + 1));
    trace::SpanContext sent =
        ExtractTraceContext(trace::Context(), SentMessage(reqs[i])).span_context();
    EXPECT_EQ(sent.trace_id, attempts[i]->context.trace_id);
    EXPECT_EQ(sent.span_id, attempts[i]->context.span_id);
    EXPECT_EQ(sent.trace_flags, attempts[i]->context.trace_flags);
    EXPECT_TRUE(sent.IsSampled());
    EXPECT_NE(sent.span_id, autocommit[0].context.span_id);
  }
}

}  // namespace
}  // namespace kf::client
