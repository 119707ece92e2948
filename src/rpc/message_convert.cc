#include "rpc/message_convert.h"

#include <utility>

#include "common/errors.h"
#include "common/status_macros.h"
#include "message/validate.h"
#include "wal/txn/txn_message.h"

namespace kf::rpc {

void ConsumedToProto(const ImmutableMessage& msg, kingfisher::v1::ConsumedMessage* out) {
  out->set_message_id(msg.id().Encode());
  msg.message().EncodeTo(out->mutable_message());
  if (const wal::TxnMessage* txn = wal::AsTxnMessage(msg)) {
    for (const ImmutableMessagePtr& inner : txn->inner()) ConsumedToProto(*inner, out->add_inner());
  }
}

absl::StatusOr<std::string> ResolvePChannel(const std::string& pchannel,
                                            std::string_view vchannel) {
  if (vchannel.empty()) {
    if (pchannel.empty()) {
      return StreamingError(StreamingCode::kInvalidArgument,
                            "request names neither a pchannel nor a vchannel");
    }
    return pchannel;
  }
  ASSIGN_OR_RETURN(std::string derived, PChannelOfVChannel(vchannel));
  if (!pchannel.empty() && pchannel != derived) {
    return StreamingError(
        StreamingCode::kInvalidArgument,
        "vchannel '" + std::string(vchannel) + "' is not on pchannel '" + pchannel + "'");
  }
  return derived;
}

}  // namespace kf::rpc
