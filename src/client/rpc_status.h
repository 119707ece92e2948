// Conversions between the wire errors of streaming.proto and absl::Status, private to the
// client library (src/rpc owns the server-side conversion; this one only decodes).
//
// A per-request error (kingfisher.v1.Error in a response) and a stream-level grpc::Status (with
// a serialized kingfisher.v1.Error in error_details) both become a status whose code is the gRPC
// code and whose streaming code (errors.h) is attached when the server sent one.
// Pure functions: thread-safe, no errors of their own.
#pragma once

#include "absl/status/status.h"
#include "grpcpp/support/status.h"
#include "kingfisher/v1/streaming.pb.h"

namespace kf::client {

absl::Status FromErrorProto(const kingfisher::v1::Error& error);
absl::Status FromGrpcStatus(const grpc::Status& status);

}  // namespace kf::client
