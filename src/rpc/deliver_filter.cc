#include "rpc/deliver_filter.h"

#include <algorithm>
#include <string>

#include "common/errors.h"
#include "message/message_type.h"

namespace kf::rpc {

absl::StatusOr<DeliverFilter> DeliverFilter::Parse(
    const google::protobuf::RepeatedPtrField<kingfisher::v1::DeliverFilter>& filters) {
  DeliverFilter out;
  for (const auto& f : filters) {
    switch (f.filter_case()) {
      case kingfisher::v1::DeliverFilter::kTimetickGt: {
        TimeTick t(f.timetick_gt());
        out.min_exclusive_ = out.min_exclusive_ ? std::max(*out.min_exclusive_, t) : t;
        break;
      }
      case kingfisher::v1::DeliverFilter::kTimetickGte: {
        TimeTick t(f.timetick_gte());
        out.min_inclusive_ = out.min_inclusive_ ? std::max(*out.min_inclusive_, t) : t;
        break;
      }
      case kingfisher::v1::DeliverFilter::kMessageTypes: {
        absl::flat_hash_set<MessageType> set;
        for (int32_t n : f.message_types().types()) {
          auto t = MessageTypeFromNumber(n);
          if (!t) {
            return StreamingError(StreamingCode::kInvalidArgument,
                                  "message type filter names unknown type " + std::to_string(n));
          }
          set.insert(*t);
        }
        out.type_sets_.push_back(std::move(set));
        break;
      }
      default:
        return StreamingError(StreamingCode::kInvalidArgument, "empty deliver filter");
    }
  }
  return out;
}

bool DeliverFilter::Pass(const ImmutableMessage& msg) const {
  const MessageType type = msg.type();
  const bool in_txn_body = msg.message().HasProperty(prop::kTxn) && type != MessageType::kCommitTxn;
  if (!in_txn_body) {
    if (min_exclusive_ && !(msg.timetick() > *min_exclusive_)) return false;
    if (min_inclusive_ && !(msg.timetick() >= *min_inclusive_)) return false;
  }
  if (!IsSystemType(type)) {
    for (const auto& set : type_sets_) {
      if (!set.contains(type)) return false;
    }
  }
  return true;
}

}  // namespace kf::rpc
