// CoordinatorRestartUnderLoad (issue 4 acceptance, fixture: cluster_fixture.h): producers append
// to every pchannel while the coordinator is killed with SIGKILL and restarted on the same
// address. Nodes take timeticks from the coordinator in batches that stay fresh for 50 ms, so
// appends stall while no coordinator acts (until the dead one's 2 s lease expired and the new
// one was elected), then go on; with a generous append timeout every append succeeds.
//
// Proves: every acknowledged message is in the WAL exactly once; no assignment is lost or
// moved (every pchannel keeps its node and term, all ASSIGNED afterwards); each pchannel, read
// from the beginning, has strictly increasing timeticks in delivery order across the restart;
// and every message appended after the restart has a timetick above every message acknowledged
// before the kill (the restarted oracle starts above the mark its predecessor persisted).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cluster_fixture.h"

namespace kf::cluster_testing {
namespace {

TEST_F(ClusterTest, CoordinatorRestartUnderLoad) {
  const auto before = Owners();
  ASSERT_EQ(before.size(), static_cast<size_t>(kPChannels));

  auto client = Connect();
  ASSERT_NE(client, nullptr);
  Load load(client.get(), {0, 1, 2}, /*in_flight=*/4);
  // Every pchannel has acknowledged appends before the kill (a total over all of them could be
  // reached by two while the client still finds the third one's node).
  for (int p = 0; p < kPChannels; ++p) ASSERT_TRUE(load.WaitAcked(p, 100, absl::Seconds(30)));

  coord_->Kill();
  const absl::Time killed_at = absl::Now();
  ASSERT_TRUE(coord_->Start()) << coord_->Output();  // same address; answers GetStatus
  // The load goes on: 100 appends per pchannel issued after the restart are acknowledged.
  std::vector<size_t> first_after(kPChannels);
  for (int p = 0; p < kPChannels; ++p) first_after[p] = load.issued(p);
  for (int p = 0; p < kPChannels; ++p) {
    ASSERT_TRUE(load.WaitAckedFrom(p, first_after[p], 100, absl::Seconds(40)))
        << "pchannel " << p << " did not resume\n"
        << coord_->Output();
  }
  load.Stop();

  // No assignment lost, none moved: same node, same term, all ASSIGNED.
  ASSERT_TRUE(WaitAllAssigned(absl::Seconds(30)));
  EXPECT_EQ(Owners(), before);

  for (int p = 0; p < kPChannels; ++p) {
    const std::vector<Load::Op> ops = load.Ops(p);
    uint64_t max_before_kill = 0;             // timetick of appends acknowledged before the kill
    uint64_t min_after_restart = UINT64_MAX;  // ... of appends issued after the restart
    absl::Duration longest_gap;               // between consecutive acknowledgements
    absl::Time previous_ack = absl::InfinitePast();
    std::vector<absl::Time> acks;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Load::Op& op = ops[i];
      ASSERT_TRUE(op.result.ok()) << op.payload << ": " << op.result.status();
      const uint64_t tt = op.result->timetick.value();
      if (op.done < killed_at) max_before_kill = std::max(max_before_kill, tt);
      if (i >= first_after[p]) min_after_restart = std::min(min_after_restart, tt);
      acks.push_back(op.done);
    }
    std::sort(acks.begin(), acks.end());
    for (absl::Time t : acks) {
      if (previous_ack != absl::InfinitePast()) {
        longest_gap = std::max(longest_gap, t - previous_ack);
      }
      previous_ack = t;
    }
    std::printf("pchannel %d: %zu appends, longest time without an acknowledgement %.0f ms\n", p,
                ops.size(), absl::ToDoubleMilliseconds(longest_gap));
    ASSERT_GT(max_before_kill, 0u) << "nothing acknowledged before the kill on pchannel " << p;
    EXPECT_GT(min_after_restart, max_before_kill) << "pchannel " << p;

    const auto log = ReadPChannelToEnd(p);
    ExpectExactlyOnce(log, ops, PChannel(p));
    ExpectOrdered(log, PChannel(p));
  }
  EXPECT_TRUE(coord_->Running());
  for (auto& [id, node] : nodes_) EXPECT_TRUE(node->Running()) << "node " << id;
}

}  // namespace
}  // namespace kf::cluster_testing
