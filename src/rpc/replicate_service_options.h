// Options of the Replicate service (replicate_service.h), apart from it so that the binaries
// configure it without gRPC headers (rpc_server.h).
#pragma once

#include <string>

#include "absl/time/time.h"

namespace kf::replicate {
class DdlPieces;
class ReplicateManager;
}  // namespace kf::replicate

namespace kf::rpc {

struct ReplicateServiceOptions {
  std::string cluster_id;  // this cluster's (the server's `cluster`)
  // The node's replicators, for Status; borrowed. Null: none run here.
  const replicate::ReplicateManager* manager = nullptr;
  // Where the copies of the primary's DDL broadcasts are recorded (replicate/ddl_pieces.h);
  // borrowed. Null: not recorded, so the DDL's callbacks never run here.
  const replicate::DdlPieces* ddl_pieces = nullptr;
  int max_calls = 64;  // calls at once; beyond: RESOURCE_EXHAUSTED
  absl::Duration max_call_timeout = absl::Seconds(30);
};

}  // namespace kf::rpc
