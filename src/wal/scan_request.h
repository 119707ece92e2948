// ScanOptionsFromProto: a Consume `create` request (streaming.proto) as the Wal's ScanOptions —
// the one conversion shared by the node's Consume handler and the client's in-process path.
//
// Pure function: thread-safe. Errors: INVALID_ARGUMENT (kInvalidArgument) for an unknown policy
// kind, a START_FROM/START_AFTER without a valid id, or a bad filter.
#pragma once

#include "absl/status/statusor.h"
#include "kingfisher/v1/streaming.pb.h"
#include "wal/wal.h"

namespace kf::wal {

absl::StatusOr<DeliverPolicy> DeliverPolicyFromProto(const kingfisher::v1::DeliverPolicy& p);

// Policy, vchannel (empty = the whole pchannel) and filters of `create`.
absl::StatusOr<ScanOptions> ScanOptionsFromProto(
    const kingfisher::v1::ConsumeRequest::Create& create);

}  // namespace kf::wal
