#include "streaming/ddl/broadcast_task.h"

#include "absl/strings/str_cat.h"

namespace kf::streaming::ddl {

std::string BroadcastIdempotencyKey(uint64_t broadcast_id, int index) {
  return absl::StrCat("bc", broadcast_id, ":", index + 1);
}

MutableMessage VChannelCopy(const MutableMessage& message,
                            const kingfisher::v1::BroadcastTask& task, int index) {
  MutableMessage copy = message;
  copy.set_vchannel(task.vchannels(index));
  copy.set_idempotency_key(BroadcastIdempotencyKey(task.broadcast_id(), index));
  return copy;
}

kingfisher::v1::BroadcastAck ToAck(std::string_view vchannel, const BroadcastAppendResult& r) {
  kingfisher::v1::BroadcastAck ack;
  ack.set_vchannel(std::string(vchannel));
  ack.set_message_id(r.id.Encode());
  ack.set_timetick(r.timetick.value());
  ack.set_last_confirmed(r.last_confirmed.Encode());
  return ack;
}

kingfisher::v1::BroadcastAck AlreadyDroppedAck(std::string_view vchannel) {
  kingfisher::v1::BroadcastAck ack;
  ack.set_vchannel(std::string(vchannel));
  return ack;
}

const kingfisher::v1::BroadcastAck* FindAck(const kingfisher::v1::BroadcastTask& task,
                                            std::string_view vchannel) {
  for (const auto& ack : task.acks()) {
    if (ack.vchannel() == vchannel) return &ack;
  }
  return nullptr;
}

absl::StatusOr<MutableMessage> TaskMessage(const kingfisher::v1::BroadcastTask& task) {
  absl::StatusOr<MutableMessage> m = MutableMessage::Decode(task.message());
  if (!m.ok() || !m->broadcast_header().has_value()) {
    return absl::DataLossError(
        absl::StrCat("broadcast task ", task.broadcast_id(), ": message does not decode"));
  }
  return m;
}

}  // namespace kf::streaming::ddl
