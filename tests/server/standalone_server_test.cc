// Integration tests of `kingfisher run standalone` over loopback gRPC with the generated stubs.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "grpcpp/grpcpp.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "message/message.h"
#include "server_process.h"
#include "wire/status_convert.h"

namespace kf::testing {
namespace {

using kingfisher::v1::ConsumeRequest;
using kingfisher::v1::ConsumeResponse;
using kingfisher::v1::ProduceRequest;
using kingfisher::v1::ProduceResponse;
using kingfisher::v1::ProduceResult;
using ProduceStream = grpc::ClientReaderWriter<ProduceRequest, ProduceResponse>;
using ConsumeStream = grpc::ClientReaderWriter<ConsumeRequest, ConsumeResponse>;

constexpr char kVChannel[] = "kf-dml_0_orders";

MutableMessage InsertMessage(const std::string& vchannel, const std::string& payload) {
  MutableMessage m(MessageType::kInsert, payload);
  m.set_vchannel(vchannel);
  return m;
}

// A request of one entry.
ProduceRequest RequestOf(uint64_t id, const MutableMessage& m) {
  ProduceRequest req;
  kingfisher::v1::ProduceEntry* e = req.add_entries();
  e->set_id(id);
  m.EncodeTo(e->mutable_message());
  return req;
}

// Results one at a time, from responses that may carry several.
class Results {
 public:
  explicit Results(ProduceStream* stream) : stream_(stream) {}
  bool Next(ProduceResult* out) {
    while (next_ >= response_.results_size()) {
      if (!stream_->Read(&response_)) return false;
      next_ = 0;
    }
    *out = response_.results(next_++);
    return true;
  }

 private:
  ProduceStream* stream_;
  ProduceResponse response_;
  int next_ = 0;
};

ProduceRequest InsertRequest(uint64_t request_id, const std::string& vchannel,
                             const std::string& payload) {
  return RequestOf(request_id, InsertMessage(vchannel, payload));
}

// A consumed message, decoded.
struct Consumed {
  std::string message_id;
  MutableMessage message;
};

absl::Status ErrorOf(const ProduceResult& r) {
  return r.has_error() ? kf::wire::FromProtoError(r.error()) : absl::OkStatus();
}

class Client {
 public:
  explicit Client(const std::string& address)
      : channel_(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), Args())),
        node_(kingfisher::v1::StreamingNode::NewStub(channel_)),
        coord_(kingfisher::v1::StreamingCoord::NewStub(channel_)) {}

  static grpc::ChannelArguments Args() {
    grpc::ChannelArguments args;
    args.SetMaxReceiveMessageSize(128 << 20);
    args.SetMaxSendMessageSize(128 << 20);
    return args;
  }

  // A fresh context with a deadline: no test waits forever on a broken server.
  std::unique_ptr<grpc::ClientContext> Ctx(absl::Duration d = absl::Seconds(30)) {
    auto ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(absl::ToChronoTime(absl::Now() + d));
    return ctx;
  }

  kingfisher::v1::StreamingNode::Stub* node() { return node_.get(); }
  kingfisher::v1::StreamingCoord::Stub* coord() { return coord_.get(); }

  // One produce (a one-entry request) on its own stream.
  ProduceResult ProduceOne(const ProduceRequest& req) {
    auto ctx = Ctx();
    auto stream = node_->Produce(ctx.get());
    EXPECT_TRUE(stream->Write(req));
    ProduceResult resp;
    EXPECT_TRUE(Results(stream.get()).Next(&resp));
    stream->WritesDone();
    EXPECT_TRUE(stream->Finish().ok());
    return resp;
  }

  // Consumes `vchannel` from the start until `want` non-TimeTick messages arrived (or the
  // deadline passes); returns them.
  std::vector<Consumed> ConsumeAll(const std::string& vchannel, size_t want,
                                   absl::Duration timeout = absl::Seconds(20)) {
    auto ctx = Ctx(timeout);
    auto stream = node_->Consume(ctx.get());
    ConsumeRequest create;
    create.mutable_create()->set_vchannel(vchannel);
    create.mutable_create()->mutable_policy()->set_kind(kingfisher::v1::DeliverPolicy::ALL);
    EXPECT_TRUE(stream->Write(create));
    ConsumeResponse resp;
    EXPECT_TRUE(stream->Read(&resp));
    EXPECT_TRUE(resp.created()) << resp.DebugString();
    std::vector<Consumed> out;
    while (out.size() < want && stream->Read(&resp)) {
      if (!resp.has_batch() || resp.batch().messages().empty()) {
        ADD_FAILURE() << "unexpected consume response " << resp.DebugString();
        break;
      }
      for (const kingfisher::v1::ConsumedMessage& m : resp.batch().messages()) {
        absl::StatusOr<MutableMessage> msg = MutableMessage::Decode(m.message());
        EXPECT_TRUE(msg.ok()) << msg.status();
        if (msg.ok() && msg->type() != MessageType::kTimeTick) {
          out.push_back({m.message_id(), *std::move(msg)});
        }
      }
    }
    ctx->TryCancel();
    stream->Finish();
    return out;
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<kingfisher::v1::StreamingNode::Stub> node_;
  std::unique_ptr<kingfisher::v1::StreamingCoord::Stub> coord_;
};

class StandaloneServerTest : public ::testing::Test {
 protected:
  std::unique_ptr<ServerProcess> StartServer(std::vector<std::string> extra_args = {},
                                             std::map<std::string, std::string> env = {},
                                             std::string binary = "kingfisher") {
    auto server =
        std::make_unique<ServerProcess>(ServerProcess::Options{.data_dir = data_dir(),
                                                               .extra_args = std::move(extra_args),
                                                               .env = std::move(env),
                                                               .binary = std::move(binary)});
    if (!server->Start()) {
      ADD_FAILURE() << "server did not start:\n" << server->Output();
      return nullptr;
    }
    return server;
  }
  std::string data_dir() const { return tmp_.path() + "/data"; }

  TempDir tmp_;
};

TEST_F(StandaloneServerTest, ProduceConsumeRoundTripAndStatus) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  Client client(server->address());

  // Status: one node, every pchannel assigned to it.
  {
    auto ctx = client.Ctx();
    kingfisher::v1::GetStatusResponse status;
    ASSERT_TRUE(client.coord()->GetStatus(ctx.get(), {}, &status).ok());
    ASSERT_EQ(status.nodes_size(), 1);
    EXPECT_EQ(status.nodes(0).id(), 1);
    EXPECT_EQ(status.nodes(0).address(), server->address());
    EXPECT_EQ(status.nodes(0).state(), "ONLINE");
    ASSERT_EQ(status.pchannels_size(), 4);
    for (int i = 0; i < 4; ++i) {
      EXPECT_EQ(status.pchannels(i).pchannel(), absl::StrCat("kf-dml_", i));
      EXPECT_EQ(status.pchannels(i).node(), 1);
      EXPECT_GE(status.pchannels(i).term(), 1);
      EXPECT_EQ(status.pchannels(i).state(), "ASSIGNED");
    }
  }

  auto ctx = client.Ctx();
  auto stream = client.node()->Produce(ctx.get());
  const int kCount = 5;
  for (int i = 1; i <= kCount; ++i) {
    ASSERT_TRUE(stream->Write(InsertRequest(i, kVChannel, absl::StrCat("payload-", i))));
  }
  std::map<uint64_t, ProduceResult> acks;
  Results results(stream.get());
  for (int i = 0; i < kCount; ++i) {
    ProduceResult r;
    ASSERT_TRUE(results.Next(&r));
    ASSERT_TRUE(ErrorOf(r).ok()) << ErrorOf(r);
    EXPECT_FALSE(r.message_id().empty());
    EXPECT_GT(r.timetick(), 0u);
    EXPECT_GE(r.term(), 1);
    acks[r.id()] = r;
  }
  ASSERT_EQ(acks.size(), static_cast<size_t>(kCount));
  for (int i = 2; i <= kCount; ++i) EXPECT_LT(acks[i - 1].timetick(), acks[i].timetick());

  // A request's appends complete together: its results come back in one response, not the
  // first alone and the rest after it was written (another vchannel: the consume below counts).
  {
    ProduceRequest batch;
    for (int i = 0; i < 20; ++i) {
      kingfisher::v1::ProduceEntry* e = batch.add_entries();
      e->set_id(100 + i);
      InsertMessage("kf-dml_1_batched", absl::StrCat("batched-", i)).EncodeTo(e->mutable_message());
    }
    ASSERT_TRUE(stream->Write(batch));
    ProduceResponse resp;
    ASSERT_TRUE(stream->Read(&resp));
    EXPECT_EQ(resp.results_size(), 20) << resp.DebugString();
    for (const ProduceResult& r : resp.results()) EXPECT_TRUE(ErrorOf(r).ok()) << ErrorOf(r);
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());

  auto messages = client.ConsumeAll(kVChannel, kCount);
  ASSERT_EQ(messages.size(), static_cast<size_t>(kCount));
  for (int i = 1; i <= kCount; ++i) {
    EXPECT_EQ(messages[i - 1].message.payload(), absl::StrCat("payload-", i));
    EXPECT_EQ(messages[i - 1].message_id, acks[i].message_id());
    EXPECT_EQ(messages[i - 1].message.properties().at("_vc"), kVChannel);
  }

  // /healthz on the HTTP port.
  std::string health = HttpGet(server->http_port(), "/healthz");
  EXPECT_NE(health.find(" 200 "), std::string::npos) << health;
  EXPECT_NE(health.find("ok"), std::string::npos) << health;

  ProcessResult stopped = server->Stop();
  EXPECT_TRUE(stopped.exited);
  EXPECT_EQ(stopped.exit_code, 0) << stopped.output;
}

// A request as large as the server takes grows by what the WAL adds to its message (timetick,
// LCMID): with user properties unbounded it could outgrow what the server may send, and was
// acknowledged but never delivered. User properties are bounded far below the 4 MiB of
// headroom the gRPC limits have above max_payload_bytes.
TEST_F(StandaloneServerTest, AMessageAsLargeAsARequestMayBeIsReadable) {
  constexpr size_t kMaxPayload = 1024;
  auto server = StartServer({"--max-payload-bytes", std::to_string(kMaxPayload)});
  ASSERT_NE(server, nullptr);
  Client client(server->address());
  const std::string v = "kf-dml_1_limits";
  const size_t request_limit = kMaxPayload + (4 << 20);
  MutableMessage m = InsertMessage(v, std::string(kMaxPayload, 'p'));
  size_t value = request_limit - kMaxPayload - 64;
  for (int i = 0; i < 4; ++i) {
    m.SetProperty("big", std::string(value, 'v'));
    value += request_limit - RequestOf(1, m).ByteSizeLong();
  }
  const ProduceRequest at_limit = RequestOf(1, m);
  ASSERT_EQ(at_limit.ByteSizeLong(), request_limit);
  absl::Status s = ErrorOf(client.ProduceOne(at_limit));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("exceed the limit of 1048576 bytes"), std::string::npos) << s;

  // A message near the largest the limits allow (its system properties take the rest) is
  // delivered.
  MutableMessage largest = InsertMessage(v, std::string(kMaxPayload, 'p'));
  largest.SetProperty("big", std::string((1 << 20) - 64, 'v'));
  ASSERT_TRUE(ErrorOf(client.ProduceOne(RequestOf(2, largest))).ok());
  std::vector<Consumed> got = client.ConsumeAll(v, 1);
  ASSERT_EQ(got.size(), 1u) << "acknowledged but not delivered";
  EXPECT_EQ(got[0].message.GetProperty("big")->size(), (1u << 20) - 64);
}

TEST_F(StandaloneServerTest, BadInputIsRejectedAndTheServerKeepsServing) {
  std::ofstream(tmp_.path() + "/kf.yaml") << "max_payload_bytes: 1024\n";
  auto server = StartServer({"--config", tmp_.path() + "/kf.yaml"});
  ASSERT_NE(server, nullptr);
  Client client(server->address());
  auto ctx = client.Ctx();
  auto stream = client.node()->Produce(ctx.get());
  Results results(stream.get());

  // Each bad request is answered (INVALID_ARGUMENT, its own id) before the next is sent:
  // nothing waits on a WAL.
  auto expect_invalid = [&](const ProduceRequest& req, const std::string& what) {
    SCOPED_TRACE(what);
    ASSERT_TRUE(stream->Write(req));
    ProduceResult r;
    ASSERT_TRUE(results.Next(&r));
    EXPECT_EQ(r.id(), req.entries(0).id());
    absl::Status s = ErrorOf(r);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_EQ(GetStreamingCode(s), StreamingCode::kInvalidArgument);
    EXPECT_FALSE(s.message().empty());
  };

  MutableMessage unknown_type = InsertMessage(kVChannel, "x");
  unknown_type.SetProperty("_t", "77");
  expect_invalid(RequestOf(1, unknown_type), "unknown message type");

  MutableMessage reserved = InsertMessage(kVChannel, "x");
  reserved.SetProperty("_tt", "abc");
  expect_invalid(RequestOf(2, reserved), "user-set reserved property _tt");

  expect_invalid(InsertRequest(3, kVChannel, std::string(2000, 'p')), "oversize payload");

  expect_invalid(InsertRequest(4, "kf-dml_9_x", "x"), "vchannel on a pchannel that does not exist");

  // Garbage where the message should be: the entry holds bytes that are no Message.
  ProduceRequest garbage;
  garbage.add_entries()->set_id(5);
  garbage.mutable_entries(0)->set_message(std::string("\xff\xff\xff\xff\x0f\x12garbage", 13));
  expect_invalid(garbage, "garbage bytes as the message");

  // A stale term is ABORTED / UNMATCHED_CHANNEL_TERM (the client re-resolves the assignment).
  {
    ProduceRequest stale = InsertRequest(7, kVChannel, "x");
    stale.set_term(99);
    ASSERT_TRUE(stream->Write(stale));
    ProduceResult r;
    ASSERT_TRUE(results.Next(&r));
    EXPECT_EQ(r.id(), 7u);
    absl::Status s = ErrorOf(r);
    EXPECT_TRUE(absl::IsAborted(s)) << s;
    EXPECT_EQ(GetStreamingCode(s), StreamingCode::kUnmatchedChannelTerm) << s;
  }

  // The same stream still appends.
  ASSERT_TRUE(stream->Write(InsertRequest(6, kVChannel, "good")));
  ProduceResult ok;
  ASSERT_TRUE(results.Next(&ok));
  EXPECT_EQ(ok.id(), 6u);
  EXPECT_TRUE(ErrorOf(ok).ok()) << ErrorOf(ok);

  // One request with good and bad messages interleaved: each good one is appended and
  // acknowledged, each bad one fails with its own error; nothing is all-or-nothing.
  {
    ProduceRequest mixed;
    mixed.set_pchannel("kf-dml_0");
    auto add = [&](uint64_t id, const MutableMessage& m) {
      kingfisher::v1::ProduceEntry* e = mixed.add_entries();
      e->set_id(id);
      m.EncodeTo(e->mutable_message());
    };
    MutableMessage bad_ik = InsertMessage(kVChannel, "x");
    bad_ik.set_idempotency_key("no-sequence");
    add(10, InsertMessage(kVChannel, "good-10"));
    add(11, InsertMessage(kVChannel, std::string(2000, 'p')));  // oversize
    add(12, InsertMessage(kVChannel, "good-12"));
    add(13, InsertMessage("kf-dml_1_orders", "x"));  // not on the request's pchannel
    add(14, InsertMessage(kVChannel, "good-14"));
    add(15, bad_ik);
    add(16, InsertMessage(kVChannel, "good-16"));
    ASSERT_TRUE(stream->Write(mixed));
    std::map<uint64_t, ProduceResult> by_id;
    for (int i = 0; i < mixed.entries_size(); ++i) {
      ProduceResult r;
      ASSERT_TRUE(results.Next(&r));
      EXPECT_TRUE(by_id.emplace(r.id(), r).second) << "answered twice: " << r.id();
    }
    ASSERT_EQ(by_id.size(), 7u);
    for (uint64_t id : {11, 13, 15}) {
      absl::Status s = ErrorOf(by_id[id]);
      EXPECT_TRUE(absl::IsInvalidArgument(s)) << id << ": " << s;
      EXPECT_TRUE(by_id[id].message_id().empty()) << id;
    }
    uint64_t previous = ok.timetick();
    for (uint64_t id : {10, 12, 14, 16}) {
      EXPECT_TRUE(ErrorOf(by_id[id]).ok()) << id << ": " << ErrorOf(by_id[id]);
      EXPECT_GT(by_id[id].timetick(), previous) << id << ": appended in request order";
      previous = by_id[id].timetick();
    }
  }
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());

  // Consume without create: a terminal INVALID_ARGUMENT.
  {
    auto cctx = client.Ctx();
    auto consume = client.node()->Consume(cctx.get());
    ConsumeRequest close;
    close.set_close(true);
    ASSERT_TRUE(consume->Write(close));
    ConsumeResponse r;
    ASSERT_TRUE(consume->Read(&r));
    ASSERT_TRUE(r.has_error()) << r.DebugString();
    EXPECT_TRUE(absl::IsInvalidArgument(kf::wire::FromProtoError(r.error())));
    EXPECT_FALSE(consume->Read(&r));
    grpc::Status st = consume->Finish();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_EQ(GetStreamingCode(kf::wire::FromGrpcStatus(st)), StreamingCode::kInvalidArgument);
  }
  // Consume of a vchannel on a pchannel that does not exist.
  {
    auto cctx = client.Ctx();
    auto consume = client.node()->Consume(cctx.get());
    ConsumeRequest create;
    create.mutable_create()->set_vchannel("kf-dml_9_x");
    ASSERT_TRUE(consume->Write(create));
    ConsumeResponse r;
    ASSERT_TRUE(consume->Read(&r));
    ASSERT_TRUE(r.has_error()) << r.DebugString();
    EXPECT_TRUE(absl::IsInvalidArgument(kf::wire::FromProtoError(r.error())));
    EXPECT_EQ(consume->Finish().error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  }

  // And a later valid consumer still works: only the good messages were written, in order.
  auto messages = client.ConsumeAll(kVChannel, 5);
  std::vector<std::string> payloads;
  for (const Consumed& c : messages) payloads.push_back(c.message.payload());
  EXPECT_EQ(payloads,
            (std::vector<std::string>{"good", "good-10", "good-12", "good-14", "good-16"}));

  ProcessResult stopped = server->Stop();
  EXPECT_EQ(stopped.exit_code, 0) << stopped.output;
}

// gRPC's default 4 MiB message limit is raised above the largest payload.
TEST_F(StandaloneServerTest, PayloadAboveTheGrpcDefaultLimitRoundTrips) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  Client client(server->address());
  const std::string big(6 << 20, 'b');
  ProduceResult r = client.ProduceOne(InsertRequest(1, kVChannel, big));
  ASSERT_TRUE(ErrorOf(r).ok()) << ErrorOf(r);
  auto messages = client.ConsumeAll(kVChannel, 1);
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].message.payload().size(), big.size());
  EXPECT_EQ(messages[0].message.payload(), big);
  EXPECT_EQ(server->Stop().exit_code, 0);
}

TEST_F(StandaloneServerTest, SigtermWithAppendsInFlightKeepsEveryAck) {
  auto server = StartServer();
  ASSERT_NE(server, nullptr);
  std::map<std::string, std::string> acked;  // payload -> message id
  int64_t term_before = 0;
  {
    Client client(server->address());
    auto ctx = client.Ctx();
    auto stream = client.node()->Produce(ctx.get());
    std::atomic<bool> stop_writing{false};
    std::thread writer([&] {
      for (uint64_t i = 1; i <= 100000 && !stop_writing.load(); ++i) {
        if (!stream->Write(InsertRequest(i, kVChannel, absl::StrCat("m-", i)))) break;
      }
    });
    ProduceResult r;
    Results results(stream.get());
    size_t responses = 0;
    bool signalled = false;
    size_t shutdown_errors = 0;
    while (results.Next(&r)) {
      ++responses;
      absl::Status s = ErrorOf(r);
      if (s.ok()) {
        acked[absl::StrCat("m-", r.id())] = r.message_id();
        term_before = r.term();
      } else {
        // After SIGTERM new appends are refused with ON_SHUTDOWN (retryable).
        EXPECT_TRUE(absl::IsUnavailable(s)) << s;
        EXPECT_EQ(GetStreamingCode(s), StreamingCode::kOnShutdown) << s;
        ++shutdown_errors;
      }
      if (!signalled && acked.size() >= 200) {
        ASSERT_EQ(kill(server->pid(), SIGTERM), 0);
        signalled = true;
      }
    }
    stop_writing = true;
    grpc::Status st = stream->Finish();
    writer.join();
    EXPECT_TRUE(signalled) << "stream ended after " << responses
                           << " responses: " << st.error_message();
    EXPECT_EQ(st.error_code(), grpc::StatusCode::UNAVAILABLE) << st.error_message();
  }
  ProcessResult stopped = server->WaitForExit();
  ASSERT_TRUE(stopped.exited);
  EXPECT_EQ(stopped.exit_code, 0) << stopped.output;
  ASSERT_GE(acked.size(), 200u);

  // Every ack the client received is readable after a restart.
  auto restarted = StartServer();
  ASSERT_NE(restarted, nullptr);
  Client client(restarted->address());
  auto messages = client.ConsumeAll(kVChannel, acked.size());
  std::map<std::string, std::string> found;
  for (const auto& m : messages) found[m.message.payload()] = m.message_id;
  for (const auto& [payload, id] : acked) {
    auto it = found.find(payload);
    ASSERT_NE(it, found.end()) << "acked message " << payload << " lost";
    EXPECT_EQ(it->second, id) << payload;
  }
  // Served again by node 1, at a term no lower than before (it grows when the restart finds
  // the node's registration gone, as after this SIGTERM).
  auto ctx = client.Ctx();
  kingfisher::v1::GetStatusResponse status;
  ASSERT_TRUE(client.coord()->GetStatus(ctx.get(), {}, &status).ok());
  EXPECT_EQ(status.pchannels(0).node(), 1);
  EXPECT_EQ(status.pchannels(0).state(), "ASSIGNED");
  EXPECT_GE(status.pchannels(0).term(), term_before);
  EXPECT_EQ(restarted->Stop().exit_code, 0);
}

TEST_F(StandaloneServerTest, CrashHookDiesBeforeTheAck) {
  auto server =
      StartServer({}, {{"KINGFISHER_TEST_CRASH_AFTER_DURABLE", "2"}}, "kingfisher-crash-hook");
  ASSERT_NE(server, nullptr);
  {
    Client client(server->address());
    auto ctx = client.Ctx();
    auto stream = client.node()->Produce(ctx.get());
    MutableMessage first_message = InsertMessage(kVChannel, "first");
    first_message.set_idempotency_key("p1:1");
    ProduceRequest first = RequestOf(1, first_message);
    ASSERT_TRUE(stream->Write(first));
    Results results(stream.get());
    ProduceResult r;
    ASSERT_TRUE(results.Next(&r));
    EXPECT_TRUE(ErrorOf(r).ok());
    MutableMessage second_message = InsertMessage(kVChannel, "second");
    second_message.set_idempotency_key("p1:2");
    ProduceRequest second = RequestOf(2, second_message);
    ASSERT_TRUE(stream->Write(second));
    EXPECT_FALSE(results.Next(&r)) << "the ack of the crashing append must never arrive";
    stream->Finish();
  }
  ProcessResult died = server->WaitForExit();
  ASSERT_TRUE(died.exited);
  EXPECT_EQ(died.exit_code, 137) << died.output;

  // The unacked append was durable: a retry with the same key is answered, not re-appended.
  auto restarted = StartServer();
  ASSERT_NE(restarted, nullptr);
  Client client(restarted->address());
  MutableMessage retry_message = InsertMessage(kVChannel, "second");
  retry_message.set_idempotency_key("p1:2");
  ProduceRequest retry = RequestOf(3, retry_message);
  ProduceResult r = client.ProduceOne(retry);
  ASSERT_TRUE(ErrorOf(r).ok()) << ErrorOf(r);
  auto messages = client.ConsumeAll(kVChannel, 2);
  ASSERT_EQ(messages.size(), 2u);
  EXPECT_EQ(messages[1].message.payload(), "second");
  EXPECT_EQ(messages[1].message_id, r.message_id());
  EXPECT_EQ(restarted->Stop().exit_code, 0);
}

// gRPC and cpp-httplib set SO_REUSEPORT by default on Linux: a second server would start on a
// held port and the kernel would spread clients over both. Each listener must refuse instead.
TEST_F(StandaloneServerTest, SecondServerOnAHeldPortFailsNamingThePort) {
  auto first = StartServer();
  ASSERT_NE(first, nullptr);
  const std::string grpc_port = first->address().substr(first->address().rfind(':') + 1);
  const std::string http_port = std::to_string(first->http_port());
  struct Case {
    std::string what, listen, http_listen, port;
  };
  const std::vector<Case> cases = {
      {"grpc", first->address(), "127.0.0.1:" + std::to_string(FreeLoopbackPort()), grpc_port},
      {"http", "127.0.0.1:" + std::to_string(FreeLoopbackPort()), "127.0.0.1:" + http_port,
       http_port}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ProcessResult second =
        RunKingfisher({"run", "standalone", "--data-dir", tmp_.path() + "/second-" + c.what,
                       "--listen", c.listen, "--http-listen", c.http_listen});
    ASSERT_TRUE(second.exited) << second.output;
    EXPECT_NE(second.exit_code, 0) << second.output;
    EXPECT_NE(second.output.find("address in use (port " + c.port + " "), std::string::npos)
        << second.output;
  }
  // The first one still serves.
  Client client(first->address());
  EXPECT_TRUE(ErrorOf(client.ProduceOne(InsertRequest(1, kVChannel, "still here"))).ok());
  EXPECT_EQ(first->Stop().exit_code, 0);
}

// The test helper itself: a port ServerProcess picked and another process took before the
// server bound it (a parallel test's connection) makes it pick new ports, not fail the test.
TEST_F(StandaloneServerTest, APortTakenBeforeTheFirstStartIsReplaced) {
  auto first = StartServer();  // holds a port for real
  ASSERT_NE(first, nullptr);
  const int held = std::stoi(first->address().substr(first->address().rfind(':') + 1));
  int picks = 0;
  ServerProcess second({.data_dir = tmp_.path() + "/second",
                        .pick_port = [&] { return picks++ == 0 ? held : FreeLoopbackPort(); }});
  ASSERT_TRUE(second.Start()) << second.Output();
  EXPECT_NE(second.address(), first->address());
  EXPECT_GE(picks, 4);  // two for the refused start, two for the one that serves
  EXPECT_EQ(second.Stop().exit_code, 0);
  EXPECT_EQ(first->Stop().exit_code, 0);
}

// While a restarted standalone recovers its WALs, /healthz says 503 and GetStatus (kfctl
// status) shows each pchannel RECOVERING, not the ASSIGNED its metadata kept from the last run
// nor the ASSIGNING of the new term.
TEST_F(StandaloneServerTest, StatusShowsRecoveringUntilTheWalsServe) {
  {
    auto first = StartServer();  // persists the assignments: ASSIGNED to node 1
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->Stop().exit_code, 0);
  }
  const std::string release = tmp_.path() + "/release";
  ServerProcess server({.data_dir = data_dir(),
                        .env = {{"KINGFISHER_TEST_HOLD_WAL_OPEN", release}},
                        .binary = "kingfisher-crash-hook"});
  server.Launch();
  auto recovering = server.WaitForStatus(
      [](const kingfisher::v1::GetStatusResponse& r) { return r.pchannels_size() > 0; });
  ASSERT_TRUE(recovering.has_value()) << server.Output();
  for (const auto& p : recovering->pchannels()) {
    EXPECT_EQ(p.state(), "RECOVERING") << p.DebugString();
  }
  EXPECT_NE(HttpGet(server.http_port(), "/healthz").find(" 503 "), std::string::npos);

  std::ofstream(release) << "go\n";
  ASSERT_TRUE(server.WaitHealthy()) << server.Output();
  auto serving =
      server.WaitForStatus([](const kingfisher::v1::GetStatusResponse&) { return true; });
  ASSERT_TRUE(serving.has_value());
  for (const auto& p : serving->pchannels()) EXPECT_EQ(p.state(), "ASSIGNED") << p.DebugString();
  EXPECT_EQ(server.Stop().exit_code, 0);
}

TEST(KingfisherCliTest, UnknownFlagExits2) {
  ProcessResult r = RunKingfisher({"run", "standalone", "--no-such-flag"});
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no-such-flag"), std::string::npos) << r.output;
}

TEST(KingfisherCliTest, HelpListsTheFlags) {
  ProcessResult r = RunKingfisher({"run", "standalone", "--help"});
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* flag : {"--listen", "--http-listen", "--data-dir", "--config", "--cluster",
                           "--pchannels", "--wal-backend", "--max-payload-bytes"}) {
    EXPECT_NE(r.output.find(flag), std::string::npos) << flag << "\n" << r.output;
  }
}

TEST(KingfisherCliTest, UnavailableBackendIsAClearError) {
  TempDir tmp;
  ProcessResult r = RunKingfisher({"run", "standalone", "--data-dir", tmp.path() + "/d"},
                                  {{"KINGFISHER_WAL_BACKEND", "quorum"}});
  ASSERT_TRUE(r.exited);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("needs logstores"), std::string::npos) << r.output;
}

TEST(KingfisherCliTest, RefusesADataDirThatIsNotOurs) {
  TempDir tmp;
  std::ofstream(tmp.path() + "/precious.txt") << "someone else's data";
  ProcessResult r = RunKingfisher({"run", "standalone", "--data-dir", tmp.path(), "--listen",
                                   "127.0.0.1:0", "--http-listen", "127.0.0.1:0"});
  ASSERT_TRUE(r.exited);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("not a Kingfisher data dir"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/KINGFISHER"));
}

TEST(KingfisherCliTest, RefusesADataDirItCannotCreate) {
  TempDir tmp;
  std::ofstream(tmp.path() + "/file") << "x";
  ProcessResult r = RunKingfisher({"run", "standalone", "--data-dir", tmp.path() + "/file/data",
                                   "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"});
  ASSERT_TRUE(r.exited);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("cannot create data dir"), std::string::npos) << r.output;
}

TEST(KingfisherCliTest, RefusesAReadOnlyDataDir) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores permission bits";
  TempDir tmp;
  const std::string ro = tmp.path() + "/ro";
  ASSERT_EQ(mkdir(ro.c_str(), 0555), 0);
  ProcessResult r = RunKingfisher({"run", "standalone", "--data-dir", ro, "--listen", "127.0.0.1:0",
                                   "--http-listen", "127.0.0.1:0"});
  ASSERT_TRUE(r.exited);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("not writable"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace kf::testing
