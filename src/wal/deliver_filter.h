// DeliverFilter: the reader-side filters of docs/semantics.md §3 (TimeTickGT, TimeTickGTE,
// MessageType set), applied by a Wal scanner to what it delivers (after transactions are
// assembled). Filters AND.
//
// - Timetick filters apply to non-txn messages, CommitTxn and the assembled Txn (judged by its
//   commit's timetick) only; a txn's Begin and bodies pass, so a txn is never cut in half.
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

namespace kf::wal {

class DeliverFilter {
 public:
  DeliverFilter() = default;  // passes everything

  static absl::StatusOr<DeliverFilter> Parse(
      const google::protobuf::RepeatedPtrField<kingfisher::v1::DeliverFilter>& filters);

  // Builders for in-process readers (Parse is the wire path). Each adds one filter (AND).
  DeliverFilter& AddTimeTickGT(TimeTick t);
  DeliverFilter& AddTimeTickGTE(TimeTick t);
  DeliverFilter& AddTypes(absl::flat_hash_set<MessageType> types);

  bool Pass(const ImmutableMessage& msg) const;

 private:
  std::optional<TimeTick> min_exclusive_;                    // tightest TimeTickGT
  std::optional<TimeTick> min_inclusive_;                    // tightest TimeTickGTE
  std::vector<absl::flat_hash_set<MessageType>> type_sets_;  // each must contain the type
};

}  // namespace kf::wal
