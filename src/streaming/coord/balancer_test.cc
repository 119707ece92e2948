#include "streaming/coord/balancer.h"

#include <algorithm>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace kf::streaming {

void PrintTo(const Move& m, std::ostream* os) {
  *os << "{" << m.pchannel << ": " << m.from << " -> " << m.to << " " << MoveReasonName(m.reason)
      << "}";
}

namespace {

using kingfisher::v1::NODE_DRAINING;
using kingfisher::v1::NODE_ONLINE;
using kingfisher::v1::NodeState;
using kingfisher::v1::PCHANNEL_ASSIGNED;
using kingfisher::v1::PCHANNEL_ASSIGNING;
using kingfisher::v1::PCHANNEL_UNAVAILABLE;
using kingfisher::v1::PCHANNEL_UNINITIALIZED;
using kingfisher::v1::PChannelState;
using R = Move::Reason;

struct N {
  int64_t id;
  NodeState state = NODE_ONLINE;
};
struct P {
  std::string name;
  int64_t node;
  PChannelState state = PCHANNEL_ASSIGNED;
};
struct Case {
  std::string name;
  std::vector<N> nodes;
  std::vector<P> pchannels;
  std::vector<Move> want;                 // with rebalancing allowed
  std::vector<std::string> configured{};  // empty: every pchannel of the case
  bool allow_rebalance = true;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

AssignmentSnapshot Snapshot(const Case& c) {
  AssignmentSnapshot s;
  s.version = 7;
  for (const N& n : c.nodes) {
    auto& node = s.nodes[n.id];
    node.info.set_id(n.id);
    node.info.set_state(n.state);
  }
  for (const P& p : c.pchannels) {
    auto& pc = s.pchannels[p.name];
    pc.assignment.set_pchannel(p.name);
    pc.assignment.set_node(p.node);
    pc.assignment.set_term(3);
    pc.assignment.set_state(p.state);
  }
  return s;
}

std::vector<std::string> Configured(const Case& c) {
  if (!c.configured.empty()) return c.configured;
  std::vector<std::string> out;
  for (const P& p : c.pchannels) out.push_back(p.name);
  return out;
}

const Case kCases[] = {
    {.name = "empty cluster: nothing to do", .nodes = {}, .pchannels = {}, .want = {}},
    {.name = "balanced: nothing to do",
     .nodes = {{1}, {2}},
     .pchannels = {{"a", 1}, {"b", 2}, {"c", 1, PCHANNEL_ASSIGNING}},
     .want = {}},
    {.name = "new pchannels spread evenly, ties to the lowest id",
     .nodes = {{1}, {2}, {3}},
     .pchannels = {{"a", 0, PCHANNEL_UNINITIALIZED},
                   {"b", 0, PCHANNEL_UNINITIALIZED},
                   {"c", 0, PCHANNEL_UNINITIALIZED},
                   {"d", 0, PCHANNEL_UNINITIALIZED}},
     .want = {{"a", 0, 1, R::kUnassigned},
              {"b", 0, 2, R::kUnassigned},
              {"c", 0, 3, R::kUnassigned},
              {"d", 0, 1, R::kUnassigned}}},
    {.name = "new pchannels go to the least loaded first",
     .nodes = {{1}, {2}},
     .pchannels = {{"a", 1}, {"b", 1}, {"c", 0, PCHANNEL_UNINITIALIZED}},
     .want = {{"c", 0, 2, R::kUnassigned}}},
    {.name = "dead owner: its pchannels move to the least loaded live node",
     .nodes = {{1}, {3}},
     .pchannels = {{"a", 1}, {"b", 2}, {"c", 2, PCHANNEL_ASSIGNING}, {"d", 3}},
     .want = {{"b", 2, 1, R::kNodeGone}, {"c", 2, 3, R::kNodeGone}}},
    {.name = "draining owner: moves away, and the draining node takes nothing",
     .nodes = {{1}, {2, NODE_DRAINING}},
     .pchannels = {{"a", 1}, {"b", 2}, {"c", 0, PCHANNEL_UNINITIALIZED}},
     .want = {{"b", 2, 1, R::kNodeDraining}, {"c", 0, 1, R::kUnassigned}}},
    {.name = "UNAVAILABLE pchannel gets a node once one is live",
     .nodes = {{4}},
     .pchannels = {{"a", 0, PCHANNEL_UNAVAILABLE}},
     .want = {{"a", 0, 4, R::kUnassigned}}},
    {.name = "no live node: owned and new pchannels become UNAVAILABLE",
     .nodes = {},
     .pchannels = {{"a", 1}, {"b", 0, PCHANNEL_UNINITIALIZED}, {"c", 0, PCHANNEL_UNAVAILABLE}},
     .want = {{"a", 1, 0, R::kNodeGone}, {"b", 0, 0, R::kUnassigned}}},
    {.name = "only a draining node: UNAVAILABLE",
     .nodes = {{1, NODE_DRAINING}},
     .pchannels = {{"a", 1}},
     .want = {{"a", 1, 0, R::kNodeDraining}}},
    {.name = "a joining node takes one pchannel per round",
     .nodes = {{1}, {2}},
     .pchannels = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}},
     .want = {{"a", 1, 2, R::kRebalance}}},
    {.name = "rebalancing only when allowed",
     .nodes = {{1}, {2}},
     .pchannels = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}},
     .want = {},
     .allow_rebalance = false},
    {.name = "a difference of one is balanced enough",
     .nodes = {{1}, {2}},
     .pchannels = {{"a", 1}, {"b", 1}, {"c", 2}},
     .want = {}},
    {.name = "rebalancing from the most loaded (ties: lowest id) to the least loaded",
     .nodes = {{1}, {2}, {3}},
     .pchannels = {{"a", 2}, {"b", 2}, {"c", 3}, {"d", 3}},
     .want = {{"a", 2, 1, R::kRebalance}}},
    {.name = "rebalancing after the failover moves, never moving a pchannel twice",
     .nodes = {{1}, {2}, {3}},
     .pchannels = {{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}, {"e", 9}},
     .want = {{"e", 9, 2, R::kNodeGone}, {"a", 1, 3, R::kRebalance}}},
    {.name = "unconfigured pchannels are neither moved nor counted",
     .nodes = {{1}, {2}},
     .pchannels = {{"a", 1}, {"b", 2}, {"x", 1}, {"y", 7}},
     .want = {},
     .configured = {"a", "b", "missing"}},
    {.name = "only ASSIGNING and ASSIGNED name an owner, whatever the node field says",
     .nodes = {{1}},
     .pchannels = {{"a", 1, PCHANNEL_UNINITIALIZED}},
     .want = {{"a", 0, 1, R::kUnassigned}}},
};

class BalanceTest : public ::testing::TestWithParam<Case> {};

TEST_P(BalanceTest, Moves) {
  const Case& c = GetParam();
  EXPECT_EQ(Balance(Snapshot(c), Configured(c), c.allow_rebalance), c.want) << c.name;
}

INSTANTIATE_TEST_SUITE_P(Table, BalanceTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return "case" + std::to_string(info.index);
                         });

// Repeated rounds (applying the moves as the coordinator would) converge to max - min <= 1
// from any start, and never touch a pchannel whose owner is online except to rebalance.
TEST(BalanceConvergence, ReachesBalanceOneMoveAtATime) {
  for (int nodes = 1; nodes <= 5; ++nodes) {
    for (int pchannels = 0; pchannels <= 12; ++pchannels) {
      Case c;
      for (int i = 1; i <= nodes; ++i) c.nodes.push_back({i});
      for (int i = 0; i < pchannels; ++i) c.pchannels.push_back({"p" + std::to_string(i), 1});
      AssignmentSnapshot s = Snapshot(c);
      int rounds = 0;
      for (;; ++rounds) {
        ASSERT_LT(rounds, 100);
        std::vector<Move> moves = Balance(s, Configured(c), true);
        if (moves.empty()) break;
        ASSERT_EQ(moves.size(), 1u);
        EXPECT_EQ(moves[0].reason, R::kRebalance);
        s.pchannels[moves[0].pchannel].assignment.set_node(moves[0].to);
      }
      std::map<int64_t, int> load;
      for (int i = 1; i <= nodes; ++i) load[i] = 0;
      for (const auto& [name, p] : s.pchannels) ++load[p.assignment.node()];
      int lo = pchannels, hi = 0;
      for (const auto& [id, n] : load) {
        lo = std::min(lo, n);
        hi = std::max(hi, n);
      }
      EXPECT_LE(hi - lo, 1) << nodes << " nodes, " << pchannels << " pchannels";
    }
  }
}

}  // namespace
}  // namespace kf::streaming
