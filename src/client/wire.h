// Conversions between the message model (MutableMessage) and its protobuf wire form
// kingfisher.v1.Message, private to the client library.
// Pure functions: thread-safe; no errors (every property map is representable both ways).
#pragma once

#include "kingfisher/v1/message.pb.h"
#include "message/message.h"

namespace kf::client {

void ToWire(const MutableMessage& m, kingfisher::v1::Message* out);
MutableMessage FromWire(const kingfisher::v1::Message& m);

}  // namespace kf::client
