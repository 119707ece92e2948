// Balance: the coordinator's assignment decision (docs/cluster.md, coordinator 5) as a pure
// function from one AssignmentSnapshot to the moves that should follow it.
//
// Only the configured pchannels that exist in the snapshot are managed (a configured one not
// yet created is left to the coordinator; one in the store but not configured is left alone).
// A pchannel is owned while it is ASSIGNING or ASSIGNED to a node; owners are "live" while
// their node key exists and "online" while that node is also ONLINE (not DRAINING).
//   1. Every pchannel without an online owner (unassigned, node gone, node draining) moves to
//      the online node with the fewest pchannels (ties: lowest id), counting the moves made so
//      far. With no online node it becomes UNAVAILABLE instead (unless it already is).
//   2. Then, if `allow_rebalance` and the most loaded online node has at least two more than
//      the least loaded, ONE pchannel moves from the first to the second (most loaded ties:
//      lowest id; the pchannel: the lowest name not moved in step 1). The caller allows it at
//      most once per balance interval, so a joining node takes load one pchannel at a time.
// The result is deterministic (pchannels in name order).
//
// Thread-safety: pure. Errors: none (no online node is expressed as moves to UNAVAILABLE).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "streaming/assignment_view.h"

namespace kf::streaming {

struct Move {
  enum class Reason {
    kUnassigned,  // UNINITIALIZED or UNAVAILABLE: no owner yet
    kNodeGone,    // the owner's node key is gone (lease expired or revoked)
    kNodeDraining,
    kRebalance,
  };

  std::string pchannel;
  int64_t from = 0;  // the current owner (0 = none)
  int64_t to = 0;    // the new owner; 0 = none: mark the pchannel UNAVAILABLE
  Reason reason = Reason::kUnassigned;

  bool operator==(const Move&) const = default;
};

std::string_view MoveReasonName(Move::Reason reason);

std::vector<Move> Balance(const AssignmentSnapshot& snapshot,
                          const std::vector<std::string>& pchannels, bool allow_rebalance);

}  // namespace kf::streaming
