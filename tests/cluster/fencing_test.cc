// FencingWithSigstop (issue 4 acceptance, fixture: cluster_fixture.h): the owner of pchannel 0
// is frozen with SIGSTOP while a producer has appends in flight to it. The coordinator moves the
// pchannel once the frozen node's lease (TTL 2 s) expired, and the producer goes on through the
// new owner. Then the old owner is resumed (SIGCONT) with an append at its old term already
// waiting in its socket, written straight to it over gRPC like a zombie client would.
//
// Proves: the old owner cannot append anything once the new owner took over — the zombie append
// is rejected (CHANNEL_FENCED, UNMATCHED_CHANNEL_TERM or CHANNEL_NOT_EXIST) and is not in the
// log; every acknowledged message (those in flight at SIGSTOP included) is in the log exactly
// once; reading the pchannel from the beginning, no message of the old term follows one of a
// newer term and timeticks strictly increase. And the old node learns it lost the pchannel: its
// own /metrics stops reporting pchannel 0 at the old term.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster_fixture.h"
#include "common/errors.h"
#include "grpcpp/grpcpp.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "message/message.h"
#include "message/properties.h"
#include "wire/status_convert.h"

namespace kf::cluster_testing {
namespace {

using kingfisher::v1::ProduceRequest;
using kingfisher::v1::ProduceResponse;

// One node's StreamingNode service over a connection of its own: appends that bypass the client
// library's routing, as a client with a stale route would send them.
class RawNode {
 public:
  explicit RawNode(const std::string& address)
      : channel_(grpc::CreateChannel(address, grpc::InsecureChannelCredentials())),
        node_(kingfisher::v1::StreamingNode::NewStub(channel_)),
        coord_(kingfisher::v1::StreamingCoord::NewStub(channel_)) {}

  // One round trip, so the connection is established: a stopped process cannot answer a
  // handshake, but its established connections still take writes into the socket buffer.
  bool Connect() {
    grpc::ClientContext ctx;
    ctx.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
    ctx.set_wait_for_ready(true);
    kingfisher::v1::GetStatusResponse resp;
    return coord_->GetStatus(&ctx, {}, &resp).ok();
  }

  // Opens a Produce stream and writes one append ("zombie-<sequence>") to pchannel 0 at
  // `term`.
  bool Send(int64_t term, int sequence) {
    const std::string payload = absl::StrCat("zombie-", sequence);
    ctx_ = std::make_unique<grpc::ClientContext>();
    ctx_->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
    stream_ = node_->Produce(ctx_.get());
    MutableMessage m(MessageType::kInsert, payload);
    m.set_vchannel(VChannel(0));
    m.SetProperty(std::string(prop::kVersion), std::string(prop::kCurrentVersion));
    m.set_idempotency_key(absl::StrCat("00000000deadbeef:", sequence));
    ProduceRequest req;
    req.set_pchannel(PChannel(0));
    req.set_term(term);
    kingfisher::v1::ProduceEntry* e = req.add_entries();
    e->set_id(1);
    m.EncodeTo(e->mutable_message());
    return stream_->Write(req);
  }

  // The answer to Send: OK if it was appended, else the append's (or the stream's) error.
  absl::Status Receive() {
    ProduceResponse resp;
    absl::Status out;
    if (!stream_->Read(&resp)) {
      out = kf::wire::FromGrpcStatus(stream_->Finish());
      return out.ok() ? absl::UnknownError("produce stream ended without an answer") : out;
    }
    if (resp.results_size() != 1) return absl::UnknownError(resp.DebugString());
    if (resp.results(0).has_error()) out = kf::wire::FromProtoError(resp.results(0).error());
    stream_->WritesDone();
    stream_->Finish().IgnoreError();
    return out;
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<kingfisher::v1::StreamingNode::Stub> node_;
  std::unique_ptr<kingfisher::v1::StreamingCoord::Stub> coord_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<ProduceRequest, ProduceResponse>> stream_;
};

bool IsOwnershipRejection(const absl::Status& s) {
  const StreamingCode c = GetStreamingCode(s);
  return c == StreamingCode::kChannelFenced || c == StreamingCode::kUnmatchedChannelTerm ||
         c == StreamingCode::kChannelNotExist;
}

TEST_P(ClusterBackendTest, FencingWithSigstop) {
  const auto [victim, old_term] = Owners().at(PChannel(0));
  ASSERT_GT(victim, 0);
  testing::ServerProcess& old_node = *nodes_.at(victim);
  const std::string metrics_before = testing::HttpGet(old_node.http_port(), "/metrics");
  ASSERT_EQ(ServedTerm(metrics_before, 0), old_term) << metrics_before;
  RawNode zombie(old_node.address());
  ASSERT_TRUE(zombie.Connect());

  // Attempts stuck on the frozen node are given up after 2 s and retried (same `_ik`).
  auto client = Connect(/*attempt_timeout=*/std::chrono::seconds(2));
  ASSERT_NE(client, nullptr);
  Load load(client.get(), {0}, /*in_flight=*/8);
  // A warm-up, not a latency check: on the objectstore backend appends still stall for 10 s
  // at times (seen under ASan, 2 runs in 6; not root-caused yet), so it gets room for a few.
  ASSERT_TRUE(load.WaitAcked(0, 200, absl::Seconds(60)));

  ASSERT_EQ(kill(old_node.pid(), SIGSTOP), 0);
  // Appends in flight to the frozen node (issued before or just after SIGSTOP: none can be
  // answered by it now).
  std::vector<std::string> in_flight_at_stop;
  const absl::Time stop_deadline = absl::Now() + absl::Seconds(10);
  while ((in_flight_at_stop = load.InFlight(0)).empty() && absl::Now() < stop_deadline) {
    absl::SleepFor(absl::Milliseconds(1));  // polling the producer's state, bounded
  }
  ASSERT_FALSE(in_flight_at_stop.empty());
  int64_t new_node = 0;
  int64_t new_term = 0;
  ASSERT_TRUE(WaitStatus(
      [&, victim = victim, old_term = old_term](const kingfisher::ClusterStatus& s) {
        for (const auto& p : s.pchannels) {
          if (p.pchannel == PChannel(0) && p.node != victim && p.node != 0 && p.term > old_term &&
              p.state == "ASSIGNED") {
            new_node = p.node;
            new_term = p.term;
            return true;
          }
        }
        return false;
      },
      absl::Seconds(30)))
      << "pchannel 0 was not moved away from the stopped node " << victim;
  // Appends succeed through the new owner while the old one is still frozen.
  const size_t first_after_move = load.issued(0);
  ASSERT_TRUE(load.WaitAckedFrom(0, first_after_move, 50, absl::Seconds(30)));

  // The zombie append waits in the frozen node's socket: once resumed, the node reads it while
  // racing its own discovery that it lost the pchannel (etcd watch, lease keepalive). Whichever
  // wins, the append must be refused: by the WAL's fence check if the node still has it open,
  // by its registry once it closed it, or by the WAL it is closing (CHANNEL_NOT_EXIST too).
  ASSERT_TRUE(zombie.Send(old_term, 1));
  ASSERT_EQ(kill(old_node.pid(), SIGCONT), 0);
  const absl::Status first = zombie.Receive();
  EXPECT_TRUE(IsOwnershipRejection(first)) << first;

  // It learns it lost the pchannel: its own gauges stop reporting it at the old term.
  std::string metrics;
  ASSERT_TRUE(WaitStopsServing(victim, 0, old_term, absl::Seconds(30), &metrics))
      << "node " << victim << " still serves " << PChannel(0) << " at term " << old_term << ":\n"
      << metrics;
  // And an append at the old term is still refused.
  ASSERT_TRUE(zombie.Send(old_term, 2));
  const absl::Status second = zombie.Receive();
  EXPECT_TRUE(IsOwnershipRejection(second)) << second;
  std::printf(
      "node %lld (term %lld) stopped; pchannel 0 moved to node %lld at term %lld; "
      "%zu appends in flight at SIGSTOP; the zombie got %s, then %s\n",
      static_cast<long long>(victim), static_cast<long long>(old_term),
      static_cast<long long>(new_node), static_cast<long long>(new_term), in_flight_at_stop.size(),
      first.ToString().c_str(), second.ToString().c_str());

  const size_t first_after_resume = load.issued(0);
  ASSERT_TRUE(load.WaitAckedFrom(0, first_after_resume, 50, absl::Seconds(30)));
  load.Stop();
  EXPECT_TRUE(old_node.Running());

  const std::vector<Load::Op> ops = load.Ops(0);
  for (const Load::Op& op : ops) {
    EXPECT_TRUE(op.result.ok()) << op.payload << ": " << op.result.status();
  }
  const auto log = ReadPChannelToEnd(0);
  ExpectExactlyOnce(log, ops, PChannel(0));
  ExpectOrdered(log, PChannel(0));
  // Both terms wrote (so the order check above compared them), and the zombie did not.
  size_t old_term_messages = 0;
  size_t newer_messages = 0;
  for (const auto& m : log) {
    if (m.type == MessageType::kTimeTick) continue;
    EXPECT_EQ(m.payload.rfind("zombie", 0), std::string::npos) << m.payload << " was appended";
    if (TermOf(m) == old_term) ++old_term_messages;
    if (TermOf(m) > old_term) ++newer_messages;
  }
  EXPECT_GT(old_term_messages, 0u);
  EXPECT_GT(newer_messages, 0u);
}

INSTANTIATE_TEST_SUITE_P(Backends, ClusterBackendTest,
                         ::testing::Values("local", "objectstore", "quorum"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kf::cluster_testing
