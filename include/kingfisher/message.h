// The messages of the public client API: Message (what a user appends), Rows (the payload of an
// Insert) and ConsumedMessage (what a Consumer delivers). docs/semantics.md §2 has the model.
//
// A Message carries only what a user may set: its type, vchannel, payload, user properties and
// trace context. The client stamps the rest (the idempotency key `_ik`, the version, the type
// and vchannel keys, the trace context `_tc`) and the WAL stamps the timetick, the term and the
// last-confirmed id.
//
// Thread-safety: plain values; the functions are pure. Errors: see each function.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kingfisher/properties.h"
#include "kingfisher/types.h"

namespace kingfisher {

// A message to append.
struct Message {
  MessageType type = MessageType::kUnknown;
  // "<pchannel>_<suffix>": a collection's shard ("kf-dml_0_1v0") or a raw vchannel
  // ("kf-dml_0_orders").
  std::string vchannel;
  // The type's payload; build Insert and Delete messages with InsertMessage / DeleteMessage.
  std::string payload;
  // User properties: keys must not start with '_' (an append fails with INVALID_ARGUMENT).
  Properties properties;
  // The caller's trace context: the parent of the append's `wal.autocommit` span. Not valid
  // (the default): a new trace. Transaction bodies carry their transaction's context instead.
  TraceContext trace;
};

// The rows of an Insert.
struct Rows {
  int64_t collection_id = 0;  // 0 on a raw vchannel
  std::string partition;      // "" = `_default`
  uint32_t dim = 0;           // 1..32768
  std::vector<int64_t> pks;
  std::vector<float> vectors;           // row-major: pks.size() * dim values
  std::vector<std::string> attributes;  // empty, or one JSON object per row
};

// An Insert of `rows` into `vchannel`. INVALID_ARGUMENT: no rows, a dim of 0 or above 32768,
// vectors.size() != pks.size() * dim, or attributes neither empty nor one per row.
absl::StatusOr<Message> InsertMessage(std::string vchannel, const Rows& rows);
// A Delete of `pks` from `vchannel`. INVALID_ARGUMENT: no pks.
absl::StatusOr<Message> DeleteMessage(std::string vchannel, const std::vector<int64_t>& pks);

// A message as a Consumer delivers it.
struct ConsumedMessage {
  MessageId id;
  MessageType type = MessageType::kUnknown;
  TimeTick timetick;
  MessageId last_confirmed;  // invalid if the message carries none
  std::string vchannel;      // "" = pchannel-level (TimeTick)
  Properties properties;     // all of them, the reserved ones included
  std::string payload;
  std::vector<ConsumedMessage> messages;  // Txn: Begin, bodies, Commit, in order
  // The `wal.dist_consume` span's context: the parent for the caller's downstream work. Not
  // valid for TimeTick messages.
  TraceContext trace;

  // The transaction of a Txn message or of one of its inner messages.
  std::optional<TxnId> txn_id() const;
  // An Insert's rows; INVALID_ARGUMENT for another type or a payload that does not decode.
  absl::StatusOr<Rows> rows() const;
  // A Delete's pks; INVALID_ARGUMENT for another type or a payload that does not decode.
  absl::StatusOr<std::vector<int64_t>> deleted_pks() const;
};

}  // namespace kingfisher
