// Status conversion at the RPC boundary: absl::Status (with the streaming code of
// common/errors.h attached) <-> grpc::Status (whose error_details carry a serialized
// kingfisher.v1.Error) <-> kingfisher.v1.Error (the per-request error in responses).
//
// The docs/semantics.md §3 table is the one mapping: the gRPC code is always ToStatusCode(streaming
// code) when a streaming code is known, and absl and gRPC codes share their numbers.
// Pure functions: thread-safe, no ownership, never fail (malformed input maps to a status that
// says so).
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"
#include "kingfisher/v1/streaming.pb.h"

namespace kf::wire {

// The wire form of `status`. REQUIRES: !status.ok() (an OK status gives an Error with codes 0).
kingfisher::v1::Error ToProtoError(const absl::Status& status);

// Back from the wire. The streaming code wins when it is valid (the gRPC code is derived from
// it); otherwise the gRPC code is kept and the streaming code derived (GetStreamingCode). An
// Error that says "OK" is malformed and becomes UNKNOWN.
absl::Status FromProtoError(const kingfisher::v1::Error& error);

// OK -> grpc::Status::OK; otherwise the same code and message with ToProtoError in the details.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The inverse; a status without (parseable) details keeps its gRPC code, so a transport failure
// (UNAVAILABLE from the channel) reads as StreamingCode::kTransport.
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace kf::wire
