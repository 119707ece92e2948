// Conversions between the protobuf wire types of streaming.proto and the message model
// (src/message), plus the request fields that name a channel.
//
// Pure functions: thread-safe, no ownership. Errors: INVALID_ARGUMENT (StreamingCode
// kInvalidArgument) with a message naming the bad field.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "kingfisher/v1/streaming.pb.h"
#include "message/message.h"
#include "wal/wal.h"

namespace kf::rpc {

// A delivered message on the wire.
void ConsumedToProto(const ImmutableMessage& msg, kingfisher::v1::ConsumedMessage* out);

// The pchannel a request addresses: the one named by `vchannel` (when set) and `pchannel`
// (when set) must agree; at least one must be set.
absl::StatusOr<std::string> ResolvePChannel(const std::string& pchannel, std::string_view vchannel);

}  // namespace kf::rpc
