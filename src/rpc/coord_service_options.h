// Options of the StreamingCoord service (CoordService): what it serves from. Plain struct of
// borrowed pointers (each must outlive the grpc::Server); no gRPC types, so binaries can fill it
// without including gRPC headers.
#pragma once

#include <cstdint>

namespace kf {
namespace streaming {
class AssignmentView;
class TimestampOracle;
}  // namespace streaming

namespace rpc {

class WalRegistry;

struct CoordServiceOptions {
  // Discovery (WatchAssignments) and GetStatus. Null: the standalone single-node status below.
  const streaming::AssignmentView* view = nullptr;
  // AllocateTimestamps. Null (a streaming node): UNAVAILABLE "not the coordinator".
  streaming::TimestampOracle* oracle = nullptr;
  // Reader counts in GetStatus, for the pchannels this process serves. Optional.
  const WalRegistry* registry = nullptr;
  // Without a view: GetStatus reports this one node (ONLINE, at the server's address) owning
  // every pchannel of `registry` (ASSIGNED) — standalone, until it runs a Coordinator.
  int64_t local_node_id = 1;
};

}  // namespace rpc
}  // namespace kf
