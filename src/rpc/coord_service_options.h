// Options of the StreamingCoord service (CoordService): what it serves from. Plain struct of
// borrowed pointers (each must outlive the grpc::Server); no gRPC types, so binaries can fill it
// without including gRPC headers.
#pragma once

#include <cstdint>

namespace kf {
namespace streaming {
class AssignmentView;
class TimestampOracle;
namespace node {
class WalRegistry;
}  // namespace node
}  // namespace streaming
namespace query {
class QueryRegistry;
}  // namespace query

namespace rpc {

struct CoordServiceOptions {
  // Discovery (WatchAssignments) and GetStatus. Null: both UNIMPLEMENTED (a server that does
  // not follow assignments; clients then route everything to it, see client/router.h).
  const streaming::AssignmentView* view = nullptr;
  // AllocateTimestamps. Null (a streaming node): UNAVAILABLE "not the coordinator".
  streaming::TimestampOracle* oracle = nullptr;
  // Reader counts in GetStatus, for the pchannels this process serves. Optional.
  const streaming::node::WalRegistry* registry = nullptr;
  // The streaming node of this process (0: none). GetStatus reports a pchannel assigned to it
  // (ASSIGNING or ASSIGNED) that `registry` does not serve at the assigned term yet as
  // RECOVERING: the node is still opening (recovering) its WAL, and appends to it wait.
  int64_t node_id = 0;
  // Per-pchannel data in GetStatus (log bytes, checkpoint, shards) for the pchannels this
  // process serves. Optional.
  const query::QueryRegistry* queries = nullptr;
};

}  // namespace rpc
}  // namespace kf
