// DeliverFilter: the reader-side filters of SPEC §3 (TimeTickGT, TimeTickGTE, MessageType set),
// applied by the Consume handler to what the Wal scanner yields. Filters AND.
//
// - Timetick filters apply to non-txn messages and CommitTxn only (a txn's Begin and bodies
//   pass, so a committed txn is never cut in half).
// - A type filter never drops system types (TimeTick, Begin/Commit/RollbackTxn, Txn).
//
// Immutable after Parse: thread-safe. Errors: INVALID_ARGUMENT for an empty filter or an
// unknown type number.
#pragma once

#include <optional>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "kingfisher/v1/streaming.pb.h"
#include "message/message.h"

namespace kf::rpc {

class DeliverFilter {
 public:
  DeliverFilter() = default;  // passes everything

  static absl::StatusOr<DeliverFilter> Parse(
      const google::protobuf::RepeatedPtrField<kingfisher::v1::DeliverFilter>& filters);

  bool Pass(const ImmutableMessage& msg) const;

 private:
  std::optional<TimeTick> min_exclusive_;                    // tightest TimeTickGT
  std::optional<TimeTick> min_inclusive_;                    // tightest TimeTickGTE
  std::vector<absl::flat_hash_set<MessageType>> type_sets_;  // each must contain the type
};

}  // namespace kf::rpc
