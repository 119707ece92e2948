#include "streaming/coord/balancer.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace kf::streaming {
namespace {

using kingfisher::v1::PChannelAssignment;

// The node a pchannel is on (0 = none): only ASSIGNING and ASSIGNED name an owner.
int64_t OwnerOf(const PChannelAssignment& a) {
  if (a.state() == kingfisher::v1::PCHANNEL_ASSIGNING ||
      a.state() == kingfisher::v1::PCHANNEL_ASSIGNED) {
    return a.node();
  }
  return 0;
}

// The online node with the fewest pchannels, ties to the lowest id (map order).
int64_t LeastLoaded(const std::map<int64_t, int>& load) {
  auto best = load.begin();
  for (auto it = load.begin(); it != load.end(); ++it) {
    if (it->second < best->second) best = it;
  }
  return best->first;
}

int64_t MostLoaded(const std::map<int64_t, int>& load) {
  auto best = load.begin();
  for (auto it = load.begin(); it != load.end(); ++it) {
    if (it->second > best->second) best = it;
  }
  return best->first;
}

}  // namespace

std::string_view MoveReasonName(Move::Reason reason) {
  switch (reason) {
    case Move::Reason::kUnassigned:
      return "unassigned";
    case Move::Reason::kNodeGone:
      return "node_gone";
    case Move::Reason::kNodeDraining:
      return "node_draining";
    case Move::Reason::kRebalance:
      return "rebalance";
  }
  return "unknown";
}

std::vector<Move> Balance(const AssignmentSnapshot& snapshot,
                          const std::vector<std::string>& pchannels, bool allow_rebalance) {
  // Managed: configured and present, in name order (the snapshot's map is sorted).
  const std::set<std::string> configured(pchannels.begin(), pchannels.end());
  std::map<int64_t, int> load;  // online node -> pchannels it owns
  for (const auto& [id, node] : snapshot.nodes) {
    if (node.info.state() == kingfisher::v1::NODE_ONLINE) load[id] = 0;
  }
  std::vector<Move> moves;
  std::vector<const PChannelAssignment*> orphans;
  for (const auto& [name, p] : snapshot.pchannels) {
    if (configured.count(name) == 0) continue;
    const int64_t owner = OwnerOf(p.assignment);
    if (owner != 0 && load.count(owner) != 0) {
      ++load[owner];
    } else {
      orphans.push_back(&p.assignment);
    }
  }

  std::set<std::string> moved;
  for (const PChannelAssignment* a : orphans) {
    const int64_t owner = OwnerOf(*a);
    Move::Reason reason = Move::Reason::kUnassigned;
    if (owner != 0) {
      reason =
          snapshot.nodes.count(owner) != 0 ? Move::Reason::kNodeDraining : Move::Reason::kNodeGone;
    }
    if (load.empty()) {
      // Nowhere to go: say so, once (an UNAVAILABLE pchannel has no owner to lose).
      if (a->state() != kingfisher::v1::PCHANNEL_UNAVAILABLE) {
        moves.push_back({a->pchannel(), owner, 0, reason});
      }
      continue;
    }
    const int64_t target = LeastLoaded(load);
    ++load[target];
    moves.push_back({a->pchannel(), owner, target, reason});
    moved.insert(a->pchannel());
  }

  if (!allow_rebalance || load.size() < 2) return moves;
  const int64_t from = MostLoaded(load);
  const int64_t to = LeastLoaded(load);
  if (load[from] - load[to] < 2) return moves;
  for (const auto& [name, p] : snapshot.pchannels) {
    if (configured.count(name) == 0 || moved.count(name) != 0) continue;
    if (OwnerOf(p.assignment) != from) continue;
    moves.push_back({name, from, to, Move::Reason::kRebalance});
    break;
  }
  return moves;
}

}  // namespace kf::streaming
