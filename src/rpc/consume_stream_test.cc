// ConsumeStream over real gRPC on loopback: tailing consumers served by the shared pump thread,
// a slow consumer whose tailing position is evicted (back to its scan thread for catch-up, then
// tailing again), and shutdown with tailing consumers parked on the buffer.
#include "rpc/consume_stream.h"

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/metrics/registry.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/proto_buffer_reader.h"
#include "gtest/gtest.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "rpc/rpc_server.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/testing/memory_backend.h"
#include "wal/wal_metrics.h"
#include "wire/status_convert.h"

namespace kf::rpc {
namespace {

using kingfisher::v1::ConsumeRequest;
using kingfisher::v1::ConsumeResponse;
using ClientStream = grpc::ClientReaderWriter<ConsumeRequest, ConsumeResponse>;

constexpr char kPChannel[] = "kf-dml_0";
constexpr char kVChannel[] = "kf-dml_0_t";

class ConsumeStreamTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (server_) server_->Shutdown(absl::Seconds(5));
    if (wal_) wal_->Close();
    std::filesystem::remove_all(dir_);
  }

  // A Wal over the memory backend whose write-ahead buffer holds `buffer_bytes`, served by a
  // real RpcServer on a free loopback port.
  void Start(size_t buffer_bytes, size_t queue_messages = 256) {
    dir_ = std::filesystem::temp_directory_path() /
           absl::StrCat("kf-consume-stream-", ::getpid(), "-",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    auto tso = TimestampAllocator::Open((dir_ / "tso").string(), {});
    ASSERT_TRUE(tso.ok()) << tso.status();
    tso_ = *std::move(tso);
    wal::WalOptions o;
    o.pchannel = kPChannel;
    o.tso = tso_.get();
    o.metrics = &metrics_;
    o.buffer.capacity_bytes = buffer_bytes;
    auto w = wal::OpenWal(std::move(o),
                          std::make_unique<wal::testing::MemoryWalBackend>(kPChannel, Term(1)));
    ASSERT_TRUE(w.ok()) << w.status();
    wal_ = std::shared_ptr<wal::Wal>(*std::move(w));
    registry_.Add(wal_);
    RpcServerOptions so;
    so.listen = "127.0.0.1:0";
    so.wal_registry = &registry_;
    so.node.metrics = &metrics_;
    so.node.consume_queue_messages = queue_messages;
    auto server = RpcServer::Start(std::move(so));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }

  // A channel of its own per consumer. Without BDP probing and with a small lookahead the
  // client's receive window stays ~64 KiB, so a consumer that does not read stalls the
  // server's writes after a known amount.
  std::unique_ptr<kingfisher::v1::StreamingNode::Stub> Stub() {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);
    args.SetInt(GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES, 64 << 10);
    return kingfisher::v1::StreamingNode::NewStub(
        grpc::CreateCustomChannel(server_->address(), grpc::InsecureChannelCredentials(), args));
  }

  struct Consumer {
    std::unique_ptr<kingfisher::v1::StreamingNode::Stub> stub;
    grpc::ClientContext ctx;
    std::unique_ptr<ClientStream> stream;
  };

  // Opens a consumer of kVChannel from the latest message and waits for `created`.
  std::unique_ptr<Consumer> OpenLatest() {
    auto c = std::make_unique<Consumer>();
    c->stub = Stub();
    c->ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(60)));
    c->stream = c->stub->Consume(&c->ctx);
    ConsumeRequest create;
    create.mutable_create()->set_vchannel(kVChannel);
    create.mutable_create()->mutable_policy()->set_kind(kingfisher::v1::DeliverPolicy::LATEST);
    EXPECT_TRUE(c->stream->Write(create));
    ConsumeResponse resp;
    EXPECT_TRUE(c->stream->Read(&resp));
    EXPECT_TRUE(resp.created()) << resp.DebugString();
    return c;
  }

  // Appends inserts numbered [first, first + n) with `bytes`-byte payloads.
  void Append(int first, int n, size_t bytes) {
    for (int i = first; i < first + n; ++i) {
      std::string payload = absl::StrCat(i, ":");
      payload.resize(std::max(bytes, payload.size()), 'x');
      MutableMessage m(MessageType::kInsert, std::move(payload));
      m.set_vchannel(kVChannel);
      auto r = wal_->AppendSync(trace::Context(), std::move(m));
      ASSERT_TRUE(r.ok()) << r.status();
    }
  }

  // Reads until `n` inserts arrived; returns their numbers in arrival order.
  static std::vector<int> ReadInserts(Consumer& c, size_t n) {
    std::vector<int> got;
    ConsumeResponse resp;
    while (got.size() < n && c.stream->Read(&resp)) {
      EXPECT_FALSE(resp.has_error()) << resp.DebugString();
      for (const kingfisher::v1::ConsumedMessage& m : resp.batch().messages()) {
        auto msg = MutableMessage::Decode(m.message());
        EXPECT_TRUE(msg.ok()) << msg.status();
        if (!msg.ok() || msg->type() != MessageType::kInsert) continue;  // TimeTicks
        const std::string& p = msg->payload();
        int i = -1;
        EXPECT_TRUE(absl::SimpleAtoi(p.substr(0, p.find(':')), &i)) << p.substr(0, 32);
        got.push_back(i);
      }
    }
    return got;
  }

  static std::vector<int> Range(int first, int n) {
    std::vector<int> v(n);
    for (int i = 0; i < n; ++i) v[i] = first + i;
    return v;
  }

  uint64_t Reads(const char* mode) {
    wal::WalMetrics m(metrics_, kPChannel);
    return (std::string_view(mode) == "tailing" ? m.read_tailing() : m.read_catchup())->value();
  }

  std::filesystem::path dir_;
  metrics::Registry metrics_;
  std::unique_ptr<TimestampAllocator> tso_;
  std::shared_ptr<wal::Wal> wal_;
  streaming::node::StaticWalRegistry registry_;
  std::unique_ptr<RpcServer> server_;
};

TEST_F(ConsumeStreamTest, SixteenTailingConsumersEachGetEveryMessageOnceInOrder) {
  Start(/*buffer_bytes=*/64 << 20);
  std::vector<std::unique_ptr<Consumer>> consumers;
  for (int i = 0; i < 16; ++i) consumers.push_back(OpenLatest());
  constexpr int kMessages = 300;
  std::vector<std::vector<int>> got(consumers.size());
  std::vector<std::thread> readers;
  for (size_t i = 0; i < consumers.size(); ++i) {
    readers.emplace_back([&, i] { got[i] = ReadInserts(*consumers[i], kMessages); });
  }
  Append(0, kMessages, 100);
  for (auto& t : readers) t.join();
  for (size_t i = 0; i < consumers.size(); ++i) {
    EXPECT_EQ(got[i], Range(0, kMessages)) << "consumer " << i;
  }
  EXPECT_EQ(Reads("catchup"), 0u);  // LATEST on a live WAL: the buffer served everything
  EXPECT_GE(Reads("tailing"), 16u * kMessages);
}

TEST_F(ConsumeStreamTest, ConsumerThatStopsReadingStopsThePumpUntilItReadsAgain) {
  Start(/*buffer_bytes=*/64 << 20, /*queue_messages=*/4);
  auto c = OpenLatest();
  Append(0, 10, 1024);
  EXPECT_EQ(ReadInserts(*c, 10), Range(0, 10));
  // Not reading: ~64 KiB fill gRPC's window, 4 fill the stream's queue, and the pump stops;
  // the client's reads complete writes, which restart it.
  constexpr int kMore = 500;
  Append(10, kMore, 1024);
  EXPECT_EQ(ReadInserts(*c, kMore), Range(10, kMore));
  EXPECT_EQ(Reads("catchup"), 0u);  // nothing was evicted: every message came from the buffer
}

TEST_F(ConsumeStreamTest, SlowConsumerIsEvictedCatchesUpAndTailsAgainWithoutGapOrDuplicate) {
  Start(/*buffer_bytes=*/32 << 10);
  auto c = OpenLatest();
  Append(0, 10, 1024);
  EXPECT_EQ(ReadInserts(*c, 10), Range(0, 10));  // tailing
  const uint64_t catchup_before = Reads("catchup");
  // Not reading: gRPC's window and the stream's queue fill, and the buffer (32 KiB) evicts the
  // consumer's position long before these 2000 KiB end.
  constexpr int kFlood = 2000;
  Append(10, kFlood, 1024);
  EXPECT_EQ(ReadInserts(*c, kFlood), Range(10, kFlood));
  EXPECT_GT(Reads("catchup"), catchup_before);  // the evicted position came from the backend
  // Caught up, it tails again.
  const uint64_t tailing_before = Reads("tailing");
  std::thread more([&] { Append(10 + kFlood, 10, 1024); });
  EXPECT_EQ(ReadInserts(*c, 10), Range(10 + kFlood, 10));
  more.join();
  EXPECT_GT(Reads("tailing"), tailing_before);
}

TEST_F(ConsumeStreamTest, ShutdownEndsTailingConsumersWithOnShutdown) {
  Start(/*buffer_bytes=*/64 << 20);
  std::vector<std::unique_ptr<Consumer>> consumers;
  for (int i = 0; i < 4; ++i) consumers.push_back(OpenLatest());
  Append(0, 3, 100);
  for (auto& c : consumers) EXPECT_EQ(ReadInserts(*c, 3), Range(0, 3));
  std::thread stop([&] { server_->Shutdown(absl::Seconds(5)); });
  for (auto& c : consumers) {
    ConsumeResponse resp;
    while (c->stream->Read(&resp) && !resp.has_error()) {
    }
    EXPECT_EQ(GetStreamingCode(wire::FromGrpcStatus(c->stream->Finish())),
              StreamingCode::kOnShutdown);
  }
  stop.join();
  server_.reset();
}

// Consume is a raw method: bytes that are no ConsumeRequest get an INVALID_ARGUMENT `error`
// response and status, not a torn-down connection.
TEST_F(ConsumeStreamTest, MalformedRequestIsAnsweredWithInvalidArgument) {
  Start(/*buffer_bytes=*/1 << 20);
  grpc::GenericStub stub(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  grpc::CompletionQueue cq;
  // Each step waits for its own completion on the queue.
  auto await = [&cq](intptr_t want) {
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    EXPECT_EQ(reinterpret_cast<intptr_t>(tag), want);
    return ok;
  };
  auto call = stub.PrepareCall(&ctx, "/kingfisher.v1.StreamingNode/Consume", &cq);
  call->StartCall(reinterpret_cast<void*>(1));
  ASSERT_TRUE(await(1));
  const char garbage[] = "\xff\xff\xff\xff";  // a field number no varint can end
  grpc::Slice slice(garbage, sizeof(garbage) - 1);
  grpc::ByteBuffer request(&slice, 1);
  call->Write(request, reinterpret_cast<void*>(2));
  ASSERT_TRUE(await(2));
  grpc::ByteBuffer response;
  call->Read(&response, reinterpret_cast<void*>(3));
  ASSERT_TRUE(await(3));
  ConsumeResponse parsed;
  grpc::ProtoBufferReader reader(&response);
  ASSERT_TRUE(parsed.ParseFromZeroCopyStream(&reader));
  ASSERT_TRUE(parsed.has_error());
  EXPECT_EQ(parsed.error().streaming_code(), static_cast<int>(StreamingCode::kInvalidArgument));
  EXPECT_NE(parsed.error().message().find("malformed ConsumeRequest"), std::string::npos);
  grpc::Status status;
  call->Finish(&status, reinterpret_cast<void*>(4));
  await(4);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
  cq.Shutdown();
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
  }
}

}  // namespace
}  // namespace kf::rpc
