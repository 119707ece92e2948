// EncodeConsumedBatch: the wire form of ConsumeResponse{batch: ConsumedBatch} for a batch of
// delivered messages, built as a grpc::ByteBuffer whose large parts are the messages' own
// shared encodings (ImmutableMessage::encoded) rather than copies: the tailing consumers of a
// pchannel read the same ImmutableMessages from the write-ahead buffer, so a message is encoded
// once however many consumers it goes to, and no consumer copies its payload. The bytes are
// exactly what ConsumeResponse::SerializeToString gives for the same messages (ConsumedToProto).
//
// Pure function: thread-safe. Ownership: the buffer's slices hold references to the messages
// they share, so the buffer may outlive `batch`.
#pragma once

#include <vector>

#include "grpcpp/support/byte_buffer.h"
#include "message/message.h"

namespace kf::rpc {

grpc::ByteBuffer EncodeConsumedBatch(const std::vector<ImmutableMessagePtr>& batch);

}  // namespace kf::rpc
