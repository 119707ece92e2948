// Helpers over the persisted broadcast task (kingfisher.v1.BroadcastTask, docs/ddl.md): the
// per-vchannel copy of the message with its stable idempotency key, and the acks.
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "kingfisher/v1/ddl.pb.h"
#include "message/message.h"
#include "streaming/ddl/broadcast_appender.h"

namespace kf::streaming::ddl {

// "bc<broadcast id>:<index>", index 1-based in the task's vchannels: the same key for every
// attempt at that vchannel, in this coordinator or a later one, so the node deduplicates.
std::string BroadcastIdempotencyKey(uint64_t broadcast_id, int index);

// The copy of `message` (the task's, `_bh` and `_tc` set) appended to task.vchannels(index):
// `_vc` and `_ik` added. REQUIRES: 0 <= index < task.vchannels_size().
MutableMessage VChannelCopy(const MutableMessage& message,
                            const kingfisher::v1::BroadcastTask& task, int index);

kingfisher::v1::BroadcastAck ToAck(std::string_view vchannel, const BroadcastAppendResult& r);
// The ack of a vchannel that refused a DropCollection with COLLECTION_NOT_FOUND (it had
// dropped the collection before): done, nothing appended, so no message id, timetick or
// last_confirmed.
kingfisher::v1::BroadcastAck AlreadyDroppedAck(std::string_view vchannel);
// The ack recorded for `vchannel`, if any.
const kingfisher::v1::BroadcastAck* FindAck(const kingfisher::v1::BroadcastTask& task,
                                            std::string_view vchannel);

// The task's message; DATA_LOSS if it does not decode or has no `_bh` (a task is only ever
// written with one).
absl::StatusOr<MutableMessage> TaskMessage(const kingfisher::v1::BroadcastTask& task);

}  // namespace kf::streaming::ddl
