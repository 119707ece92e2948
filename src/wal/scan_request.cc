#include "wal/scan_request.h"

#include <string>
#include <utility>

#include "common/errors.h"
#include "common/status_macros.h"
#include "wal/deliver_filter.h"

namespace kf::wal {

absl::StatusOr<DeliverPolicy> DeliverPolicyFromProto(const kingfisher::v1::DeliverPolicy& p) {
  using Kind = DeliverPolicy::Kind;
  DeliverPolicy policy;
  switch (p.kind()) {
    case kingfisher::v1::DeliverPolicy::ALL:
      policy.kind = Kind::kAll;
      return policy;
    case kingfisher::v1::DeliverPolicy::LATEST:
      policy.kind = Kind::kLatest;
      return policy;
    case kingfisher::v1::DeliverPolicy::START_FROM:
      policy.kind = Kind::kStartFrom;
      break;
    case kingfisher::v1::DeliverPolicy::START_AFTER:
      policy.kind = Kind::kStartAfter;
      break;
    default:
      return StreamingError(StreamingCode::kInvalidArgument,
                            "unknown deliver policy kind " + std::to_string(p.kind()));
  }
  auto id = MessageId::Decode(p.message_id());
  if (!id.ok() || !id->valid()) {
    return StreamingError(StreamingCode::kInvalidArgument,
                          "deliver policy needs a valid message_id");
  }
  policy.id = *id;
  return policy;
}

absl::StatusOr<ScanOptions> ScanOptionsFromProto(
    const kingfisher::v1::ConsumeRequest::Create& create) {
  ScanOptions scan;
  ASSIGN_OR_RETURN(scan.policy, DeliverPolicyFromProto(create.policy()));
  scan.vchannel = create.vchannel();
  ASSIGN_OR_RETURN(scan.filter, DeliverFilter::Parse(create.filters()));
  return scan;
}

}  // namespace kf::wal
