// A replicating primary's pchannel moves to another node (docs/replication.md, Replicators):
// the primary is the cluster fixture's (etcd, coordinator, 3 nodes; cluster_fixture.h), the
// secondary a standalone server, cluster "west", with as many pchannels. Under load on every
// pchannel the owner of pchannel 0 is killed -9, or frozen with SIGSTOP and resumed once the
// pchannel moved; the coordinator gives the pchannel to another node once the old owner's
// lease ran out, and that node's ReplicateManager starts a replicator for it, which resumes
// from the secondary's checkpoint.
//
// Proves: every append the primary holds reaches the secondary exactly once and in the
// primary's order, on the moved pchannel and on the others; what the old owner's replicator had
// sent, or sends once resumed, is neither lost nor applied twice.
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster_fixture.h"
#include "kfctl_runner.h"

namespace kf::cluster_testing {
namespace {

// The payloads of the Inserts on `vchannel` in `log`, in order.
std::vector<std::string> Payloads(const std::vector<kingfisher::ConsumedMessage>& log,
                                  const std::string& vchannel) {
  std::vector<std::string> out;
  for (const auto& m : log) {
    if (m.vchannel == vchannel && m.type == kingfisher::MessageType::kInsert) {
      out.push_back(m.payload);
    }
  }
  return out;
}

// The payloads of `vchannel` at `endpoint`, from the beginning until `last` arrived (or a
// minute passed: a failure).
std::vector<std::string> ReadUntil(const std::string& endpoint, const std::string& vchannel,
                                   const std::string& last) {
  std::vector<std::string> out;
  auto client = kingfisher::Client::Connect({.endpoint = endpoint});
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return out;
  auto consumer =
      (*client)->CreateConsumer({.vchannel = vchannel, .policy = kingfisher::DeliverPolicy::All()});
  EXPECT_TRUE(consumer.ok()) << consumer.status();
  if (!consumer.ok()) return out;
  const kingfisher::Deadline deadline = kingfisher::Clock::now() + std::chrono::seconds(60);
  while (out.empty() || out.back() != last) {
    auto m = (*consumer)->Next(deadline);
    if (!m.ok()) {
      ADD_FAILURE() << vchannel << " at " << endpoint << " after " << out.size()
                    << " messages, without " << last << ": " << m.status();
      break;
    }
    if (m->type == kingfisher::MessageType::kInsert) out.push_back(m->payload);
  }
  return out;
}

class ReplicationMoveTest : public ClusterTest {
 protected:
  // The owner of pchannel 0 is killed -9, or frozen (SIGSTOP) until the pchannel moved and then
  // resumed: its replicator, if it was sending, sends what it read before the move.
  void MovePChannel0(bool freeze);
};

void ReplicationMoveTest::MovePChannel0(bool freeze) {
  testing::ServerProcess west(
      {.data_dir = dir_.path() + "/west",
       .extra_args = {"--cluster", "west", "--pchannels", std::to_string(kPChannels)}});
  ASSERT_TRUE(west.Start()) << west.Output();
  testing::KfctlResult configured = testing::RunKfctl(
      dir_.path(),
      {"--endpoint", coord_->address(), "--timeout", "30", "replicate", "configure", "--primary",
       absl::StrCat(kCluster, "=", coord_->address()), "--secondary", "west=" + west.address()});
  ASSERT_EQ(configured.exit_code, 0) << testing::Describe(configured);

  std::vector<int> all;
  for (int p = 0; p < kPChannels; ++p) all.push_back(p);
  Load load(client_.get(), all, /*in_flight=*/4);
  ASSERT_TRUE(load.WaitAcked(-1, 300, absl::Seconds(60)));
  // Replication runs before the move: an append acknowledged on pchannel 0 is on the secondary.
  const auto peer = [](int p) {  // the secondary's name for VChannel(p): same suffix
    return "west" + VChannel(p).substr(std::string(kCluster).size());
  };
  std::string replicated;
  for (const Load::Op& op : load.Ops(0)) {
    if (op.result.ok()) replicated = op.payload;
  }
  ASSERT_FALSE(replicated.empty());
  ASSERT_EQ(ReadUntil(west.address(), peer(0), replicated).back(), replicated);

  const auto [victim, term] = Owners().at(PChannel(0));
  testing::ServerProcess& old_owner = *nodes_.at(static_cast<int>(victim));
  if (freeze) {
    ASSERT_EQ(::kill(old_owner.pid(), SIGSTOP), 0);
  } else {
    old_owner.Kill();
  }
  ASSERT_TRUE(WaitStatus(
      [&, victim = victim, term = term](const kingfisher::ClusterStatus& s) {
        for (const auto& pc : s.pchannels) {
          if (pc.pchannel == PChannel(0)) {
            return pc.state == "ASSIGNED" && pc.node != victim && pc.term > term;
          }
        }
        return false;
      },
      absl::Seconds(30)));
  const size_t after_move = load.issued(0);
  ASSERT_TRUE(load.WaitAckedFrom(0, after_move, 100, absl::Seconds(60)));
  if (freeze) {
    ASSERT_EQ(::kill(old_owner.pid(), SIGCONT), 0);
    std::string metrics;
    ASSERT_TRUE(WaitStopsServing(static_cast<int>(victim), 0, term, absl::Seconds(30), &metrics))
        << metrics;
    const size_t after_resume = load.issued(0);
    ASSERT_TRUE(load.WaitAckedFrom(0, after_resume, 100, absl::Seconds(60)));
  }
  load.Stop();

  for (int p = 0; p < kPChannels; ++p) {
    const std::vector<kingfisher::ConsumedMessage> log = ReadPChannelToEnd(p);
    ExpectExactlyOnce(log, load.Ops(p), PChannel(p));
    const std::vector<std::string> primary = Payloads(log, VChannel(p));
    ASSERT_FALSE(primary.empty()) << PChannel(p);
    const std::vector<std::string> secondary = ReadUntil(west.address(), peer(p), primary.back());
    EXPECT_EQ(secondary, primary) << peer(p);
    std::printf("%s: %zu inserts on the primary, %zu on the secondary\n", VChannel(p).c_str(),
                primary.size(), secondary.size());
  }
}

TEST_F(ReplicationMoveTest, TheOwnerKilled) { MovePChannel0(/*freeze=*/false); }

TEST_F(ReplicationMoveTest, TheOwnerFrozenThenResumed) { MovePChannel0(/*freeze=*/true); }

}  // namespace
}  // namespace kf::cluster_testing
