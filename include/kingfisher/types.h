// The vocabulary of the public client API: strong ids, timeticks, message ids and types, trace
// contexts and the clock of deadlines. The server uses the very same types (namespace kf
// aliases them), so nothing is converted between the two.
//
// Thread-safety: plain values. Errors: MessageId::Decode and MessageId::FromText return
// INVALID_ARGUMENT for bytes or text that are not a message id.
#pragma once

#include <array>
#include <chrono>
#include <compare>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"

namespace kingfisher {

// Deadlines and timeouts of client calls.
using Clock = std::chrono::system_clock;
using Deadline = Clock::time_point;
using Duration = std::chrono::nanoseconds;

// StrongId<Tag, T>: a typed integer, so a TxnId cannot be passed where a TimeTick is expected.
// Zero-cost, totally ordered, hashable (std::hash and Abseil's hash).
template <typename Tag, typename T = uint64_t>
class StrongId {
 public:
  using ValueType = T;
  constexpr StrongId() = default;
  constexpr explicit StrongId(T v) : value_(v) {}
  constexpr T value() const { return value_; }
  constexpr auto operator<=>(const StrongId&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const StrongId& id) {
    return H::combine(std::move(h), id.value_);
  }
  friend std::ostream& operator<<(std::ostream& os, const StrongId& id) { return os << id.value_; }

 private:
  T value_{};
};

// A timetick: the hybrid timestamp `physical_ms << 18 | logical` the WAL stamps on every message
// in WAL order (docs/semantics.md §1). Zero means "none".
struct TimeTickTag {};
using TimeTick = StrongId<TimeTickTag, uint64_t>;

// A transaction id: the timetick of its BeginTxn.
struct TxnIdTag {};
using TxnId = StrongId<TxnIdTag, int64_t>;

// The message types with their wire numbers (docs/semantics.md §2).
enum class MessageType : int32_t {
  kUnknown = 0,
  kTimeTick = 1,
  kInsert = 2,
  kDelete = 3,
  kFlush = 4,
  kCreateCollection = 5,
  kDropCollection = 6,
  kCreatePartition = 7,
  kDropPartition = 8,
  kManualFlush = 9,
  kCreateSegment = 10,
  kAlterReplicateConfig = 800,
  kBeginTxn = 900,
  kCommitTxn = 901,
  kRollbackTxn = 902,
  kTxn = 999,  // synthetic: a committed transaction as consumers receive it, never appended
};

// "Insert", "TimeTick", "Txn", ...; "Unknown" for anything else.
std::string_view MessageTypeName(MessageType type);

// The WAL backend that assigned a message id.
enum class WalKind : uint8_t { kInvalid = 0, kLocal = 1, kObjectStore = 2, kQuorum = 3 };

// MessageId: the position of a message in its pchannel's WAL, as assigned by the backend;
// totally ordered within a pchannel. Every backend fits the shape (segment, entry): the local
// backend uses one global offset (segment 0), the objectstore and quorum backends (segment,
// entry in segment).
//
// Byte form (the wire, `_lc`): kind u8, varint segment, varint entry. Text form (kfctl, logs):
// "local:<entry>", or "os:<segment>.<entry>" / "q:<segment>.<entry>". Both round-trip exactly.
class MessageId {
 public:
  constexpr MessageId() = default;  // invalid; compares below every valid id
  constexpr MessageId(WalKind kind, uint64_t segment, uint64_t entry)
      : kind_(kind), segment_(segment), entry_(entry) {}
  static constexpr MessageId Local(uint64_t offset) { return {WalKind::kLocal, 0, offset}; }

  constexpr WalKind kind() const { return kind_; }
  constexpr uint64_t segment() const { return segment_; }
  constexpr uint64_t entry() const { return entry_; }
  constexpr bool valid() const { return kind_ != WalKind::kInvalid; }

  std::string Encode() const;
  static absl::StatusOr<MessageId> Decode(std::string_view bytes);
  std::string ToText() const;  // "invalid" for the invalid id
  static absl::StatusOr<MessageId> FromText(std::string_view text);

  constexpr auto operator<=>(const MessageId&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const MessageId& id) {
    return H::combine(std::move(h), id.kind_, id.segment_, id.entry_);
  }
  friend std::ostream& operator<<(std::ostream& os, const MessageId& id) {
    return os << id.ToText();
  }

 private:
  WalKind kind_ = WalKind::kInvalid;
  uint64_t segment_ = 0;
  uint64_t entry_ = 0;
};

// TraceContext: a W3C trace context (the `traceparent` of docs/tracing.md §2) — the parent the
// client's spans hang under, and the context a consumed message carries for the caller's
// downstream work. The default (all zero) is "no context": the client starts a new trace.
struct TraceContext {
  std::array<uint8_t, 16> trace_id{};
  std::array<uint8_t, 8> span_id{};
  uint8_t trace_flags = 0;  // bit 0: sampled

  // Both ids non-zero.
  bool valid() const;
  bool sampled() const { return (trace_flags & 1) != 0; }
  // "00-<32 hex trace id>-<16 hex span id>-<2 hex flags>".
  std::string ToTraceparent() const;
  // nullopt for anything that is not a version-00 traceparent with valid ids.
  static std::optional<TraceContext> FromTraceparent(std::string_view traceparent);

  bool operator==(const TraceContext&) const = default;
};

}  // namespace kingfisher

template <typename Tag, typename T>
struct std::hash<kingfisher::StrongId<Tag, T>> {
  size_t operator()(const kingfisher::StrongId<Tag, T>& id) const {
    return std::hash<T>{}(id.value());
  }
};
