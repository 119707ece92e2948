// Consumer: reads one vchannel (or a whole pchannel) in timetick order
// (docs/semantics.md §3 "Reading").
//
// A Consumer owns one Consume stream. After a transport failure it reconnects by itself (with
// backoff, inside the caller's Next deadline) and resumes strictly after the last message
// Next returned: no gap, no duplicate. It resumes from that message's LCMID with a
// TimeTickGT(its timetick) filter (docs/semantics.md §1), so a transaction begun before it and
// committed after it is still delivered whole. Messages of other vchannels are dropped by the
// server; pchannel-level messages (TimeTicks) are delivered so the reader can advance its
// watermark.
//
// Tracing (docs/tracing.md §5 "Remote consumer"): for every delivered non-TimeTick message Next
// starts and ends one `wal.dist_consume` span (CONSUMER) as a child of the message's `_tc`, and
// overwrites the delivered `_tc` with it; a Txn message gets one span and the `_tc` of the Txn
// and of all its inner messages is overwritten. ConsumedMessage::trace is that span's context
// (the parent for the caller's downstream work). TimeTick messages get no span.
//
// Thread-safety: Next must not be called concurrently; Close may be called from any thread and
// wakes a blocked Next. Ownership: the caller owns the Consumer; it shares the Client's channel.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "kingfisher/types.h"

namespace kingfisher {

struct DeliverPolicy {
  enum class Kind { kAll, kLatest, kStartFrom, kStartAfter };
  Kind kind = Kind::kAll;
  MessageId id;  // kStartFrom (inclusive) / kStartAfter (exclusive)

  static DeliverPolicy All() { return {Kind::kAll, {}}; }
  static DeliverPolicy Latest() { return {Kind::kLatest, {}}; }
  static DeliverPolicy StartFrom(MessageId id) { return {Kind::kStartFrom, id}; }
  static DeliverPolicy StartAfter(MessageId id) { return {Kind::kStartAfter, id}; }
};

// Filters AND together; system types always pass a type filter.
struct DeliverFilter {
  enum class Kind { kTimeTickGT, kTimeTickGTE, kMessageTypes };
  Kind kind = Kind::kTimeTickGT;
  TimeTick timetick;               // kTimeTickGT / kTimeTickGTE
  std::vector<MessageType> types;  // kMessageTypes

  static DeliverFilter TimeTickGT(TimeTick t) { return {Kind::kTimeTickGT, t, {}}; }
  static DeliverFilter TimeTickGTE(TimeTick t) { return {Kind::kTimeTickGTE, t, {}}; }
  static DeliverFilter Types(std::vector<MessageType> t) {
    return {Kind::kMessageTypes, {}, std::move(t)};
  }
};

struct ConsumerOptions {
  // A vchannel ("kf-dml_0_100v0", "kf-dml_0_orders") or a pchannel name ("kf-dml_0") to read
  // every message of the pchannel.
  std::string vchannel;
  DeliverPolicy policy = DeliverPolicy::Latest();
  std::vector<DeliverFilter> filters;
  // Messages buffered between the stream and Next (flow control beyond this).
  size_t buffer_messages = 1024;
};

struct ConsumedMessage {
  MessageId id;
  MessageType type = MessageType::kUnknown;
  TimeTick timetick;
  MessageId last_confirmed;  // invalid if the message carries none
  std::string vchannel;      // "" = pchannel-level
  Properties properties;     // all properties, reserved ones included
  std::string payload;
  std::vector<ConsumedMessage> messages;  // Txn: Begin, bodies, Commit in order
  TraceContext trace;                     // the wal.dist_consume context (background for TimeTick)

  std::optional<TxnId> txn_id() const;
};

class Consumer {
 public:
  virtual ~Consumer() = default;

  // The next message, waiting until `deadline`.
  // Errors:
  //   DEADLINE_EXCEEDED   nothing arrived before `deadline` (the consumer stays usable and
  //                       nothing was skipped);
  //   CANCELLED           Close was called;
  //   INVALID_ARGUMENT    the server rejected the consumer (bad vchannel/pchannel, bad policy
  //                       id); sticky;
  //   NOT_FOUND, FAILED_PRECONDITION, DATA_LOSS, INTERNAL, UNIMPLEMENTED
  //                       as reported by the server, or a message that does not decode
  //                       (DATA_LOSS); sticky: the consumer is dead.
  // UNAVAILABLE and ABORTED (the pchannel moved) are never returned: they are retried until
  // `deadline`, which then yields DEADLINE_EXCEEDED.
  virtual absl::StatusOr<ConsumedMessage> Next(absl::Time deadline) = 0;

  // Closes the stream; later Next calls return CANCELLED. Idempotent.
  virtual void Close() = 0;
};

}  // namespace kingfisher
