#include "wal/deliver_filter.h"

#include <algorithm>
#include <string>

#include "common/errors.h"
#include "message/message_type.h"

namespace kf::wal {

absl::StatusOr<DeliverFilter> DeliverFilter::Parse(
    const google::protobuf::RepeatedPtrField<kingfisher::v1::DeliverFilter>& filters) {
  DeliverFilter out;
  for (const auto& f : filters) {
    switch (f.filter_case()) {
      case kingfisher::v1::DeliverFilter::kTimetickGt:
        out.AddTimeTickGT(TimeTick(f.timetick_gt()));
        break;
      case kingfisher::v1::DeliverFilter::kTimetickGte:
        out.AddTimeTickGTE(TimeTick(f.timetick_gte()));
        break;
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
        out.AddTypes(std::move(set));
        break;
      }
      default:
        return StreamingError(StreamingCode::kInvalidArgument, "empty deliver filter");
    }
  }
  return out;
}

DeliverFilter& DeliverFilter::AddTimeTickGT(TimeTick t) {
  min_exclusive_ = min_exclusive_ ? std::max(*min_exclusive_, t) : t;
  return *this;
}

DeliverFilter& DeliverFilter::AddTimeTickGTE(TimeTick t) {
  min_inclusive_ = min_inclusive_ ? std::max(*min_inclusive_, t) : t;
  return *this;
}

DeliverFilter& DeliverFilter::AddTypes(absl::flat_hash_set<MessageType> types) {
  type_sets_.push_back(std::move(types));
  return *this;
}

bool DeliverFilter::Pass(const ImmutableMessage& msg) const {
  const MessageType type = msg.type();
  const bool in_txn_body = msg.message().HasProperty(prop::kTxn) &&
                           type != MessageType::kCommitTxn && type != MessageType::kTxn;
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

}  // namespace kf::wal
