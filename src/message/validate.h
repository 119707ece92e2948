// Admission checks on what producers send (docs/semantics.md §2 "Who sets what" and "Bad input"),
// with the vchannel naming rules of docs/semantics.md §1 (vchannel_name.h).
//
// Pure functions: thread-safe. Every rejection is StreamingError(kInvalidArgument, message)
// with a message that names the offending type, key or field, so a client can fix its input.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "message/message.h"
#include "message/properties.h"
#include "message/vchannel_name.h"  // the naming rules validation applies

namespace kf {

struct ValidationOptions {
  // Largest accepted payload (docs/semantics.md §2 default 64 MiB, configurable).
  size_t max_payload_bytes = 64u << 20;
  // Largest sum of property key and value sizes. Far below the 4 MiB the server's gRPC limits
  // leave above max_payload_bytes, so that what the WAL adds to a message (timetick, LCMID)
  // never takes it past what the server may send to its consumers.
  size_t max_property_bytes = 1u << 20;
};

// What Produce accepts from a client:
// - a known, appendable type (Txn is synthetic and never appended);
// - Insert, Delete and the txn control types; DDL (exclusive) types only with `_bh` (from the
//   broadcaster); self-controlled types (TimeTick, CreateSegment, Flush) never;
// - reserved keys only those the client library sets (`_t _v _vc _tx _tc _ik`) plus `_bh` on
//   DDL; `_tt _lc _lcs _wt _np _rh` and any other '_' key are rejected;
// - a well-formed vchannel for vchannel-scoped types (all but AlterReplicateConfig);
// - a parseable `_tx` (txn id set on Commit/Rollback), a well-formed `_ik`;
// - property keys and values valid UTF-8 (the wire form is a proto3 string map), within
//   `o.max_property_bytes` in all;
// - a payload within `o.max_payload_bytes` that decodes for its type: Insert/Delete only on a
//   collection vchannel (raw vchannels carry opaque payloads), Create/DropCollection and
//   Create/DropPartition always.
// Whether the collection exists and the Insert matches its schema is the WAL's check
// (wal/collections/collection_table.h): it needs the vchannel's state.
absl::Status ValidateProducedMessage(const MutableMessage& m, const ValidationOptions& o = {});

// Properties given by a user (API or CLI): no key may start with '_'; keys and values UTF-8.
absl::Status ValidateUserProperties(const Properties& p);

}  // namespace kf
