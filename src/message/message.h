// MutableMessage and ImmutableMessage: the message model of docs/semantics.md §2.
//
// MutableMessage is a message being built or routed: a type, a payload and a property map
// whose reserved keys ('_'-prefixed) carry the system metadata. The typed accessors below are
// the only code that knows the text encodings of docs/semantics.md §2 (base-36 timeticks, base64
// ids and protobuf headers). The reserved keys every append sets or reads are held in fixed slots
// rather than in the sorted map (see Slot); to a caller they are properties like any other.
// Thread-safety: none; owned by one thread at a time; copyable and movable.
//
// Encode/Decode give the wire and disk form, byte-compatible with the protobuf
// `kingfisher.v1.Message { bytes payload = 1; map<string,string> properties = 2; }` serialized
// deterministically (payload omitted when empty, map entries in key order, both entry fields
// always written). The codec is hand-written because it is on every append and every read.
// Decode is strict and returns INVALID_ARGUMENT (StreamingCode kInvalidArgument) for anything
// protobuf would not parse and for the ambiguities it would silently resolve: unknown field
// numbers or wire types, truncation, overlong/non-minimal varints, a repeated payload field or
// map-entry field, duplicate keys, property strings that are not UTF-8, trailing garbage.
// (Map entries may omit key or value, or order them either way, as protobuf allows.)
//
// ImmutableMessage is a message as stored in the WAL: its MessageId plus the message. Shared
// read-only (ImmutableMessagePtr) by tailing readers, hence const and safe for concurrent reads;
// its encoding is computed once, by the first reader that asks (encoded()), and shared by all.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/base/call_once.h"
#include "absl/status/statusor.h"
#include "common/hybrid_time.h"
#include "common/strong_id.h"
#include "kingfisher/v1/message.pb.h"
#include "message/message_id.h"
#include "message/message_type.h"
#include "message/properties.h"

namespace kf {

// What the WAL adaptor stamps on a message it persists (docs/semantics.md §1, docs/tracing.md §5):
// the timetick, the WAL term, the LCMID and the `_tc` of the persisting attempt's span. Held beside
// the message rather than applied to it: MutableMessage::EncodeTo(dst, stamp) writes exactly the
// bytes of the message after Stamp(stamp) without changing it, so the append path encodes
// straight into the backend's queue and stamps only a message a tailing reader keeps.
struct AppendStamp {
  static constexpr size_t kMaxTraceContextText = 44;  // base64 of a TraceContextHeader

  TimeTick timetick;
  Term term;                                // REQUIRES: term.value() >= 0
  std::optional<MessageId> last_confirmed;  // `_lc`; nullopt: the message itself (`_lcs`)
  // The `_tc` text (message_trace.h writes it); empty: `_tc` stays as it is.
  std::array<char, kMaxTraceContextText> trace_context{};
  size_t trace_context_size = 0;
};

class MutableMessage {
 public:
  MutableMessage() = default;  // type kUnknown, no properties
  // Sets `_t` (decimal type number) and `_v` ("2").
  MutableMessage(MessageType type, std::string payload);
  MutableMessage(const MutableMessage&) = default;
  MutableMessage& operator=(const MutableMessage&) = default;
  // The moved-from message is left empty (its slot values went with the slot text).
  MutableMessage(MutableMessage&& other) noexcept;
  MutableMessage& operator=(MutableMessage&& other) noexcept;

  // From `_t`; kUnknown if absent, not canonical decimal, or not a listed type.
  MessageType type() const { return type_; }

  const std::string& payload() const { return payload_; }
  std::string* mutable_payload() { return &payload_; }

  // Every property, reserved ones included, in key order: fn(std::string_view key,
  // std::string_view value).
  template <typename Fn>
  void ForEachProperty(const Fn& fn) const {
    Merge(
        present_, [this](int slot) { return SlotValue(slot); }, fn);
  }
  // A copy of every property as one map.
  Properties properties() const;
  // No checks (system use), as SetProperty: replaces every property by `properties`'.
  void SetProperties(Properties properties);
  // Moves every property out; the message keeps none.
  Properties TakeProperties();
  std::optional<std::string_view> GetProperty(std::string_view key) const;
  bool HasProperty(std::string_view key) const;
  // No checks (system use): reserved keys are written as given.
  void SetProperty(std::string key, std::string value);
  // As SetProperty, for a value the caller has as bytes: an existing entry's strings are
  // reused, so overwriting a property allocates nothing (the stamping hot path).
  void AssignProperty(std::string_view key, std::string_view value);
  void EraseProperty(std::string_view key);

  // Typed accessors over the reserved properties; a getter returns nullopt when the property
  // is absent or does not decode (never an error: validation is validate.h's job).
  std::string_view vchannel() const;  // "_vc"; "" = pchannel-level
  void set_vchannel(std::string v);   // "" erases "_vc"

  std::optional<TimeTick> timetick() const;  // "_tt" base-36
  void set_timetick(TimeTick t);

  std::optional<Term> wal_term() const;  // "_wt" base-36
  void set_wal_term(Term t);             // REQUIRES: t.value() >= 0

  // "_lc" = base64(MessageId::Encode()); nullopt if absent, undecodable, or only "_lcs" is set.
  std::optional<MessageId> last_confirmed() const;
  bool last_confirmed_is_self() const;           // "_lcs" present
  void set_last_confirmed(const MessageId& id);  // sets "_lc", clears "_lcs"
  void set_last_confirmed_self();                // sets "_lcs" (empty), clears "_lc"

  std::optional<kingfisher::v1::TxnContext> txn() const;  // "_tx"
  void set_txn(const kingfisher::v1::TxnContext& txn);

  std::optional<kingfisher::v1::BroadcastHeader> broadcast_header() const;  // "_bh"
  void set_broadcast_header(const kingfisher::v1::BroadcastHeader& h);

  std::optional<kingfisher::v1::ReplicateHeader> replicate_header() const;  // "_rh"
  void set_replicate_header(const kingfisher::v1::ReplicateHeader& h);

  std::optional<std::string_view> idempotency_key() const;  // "_ik"
  void set_idempotency_key(std::string k);

  bool not_persisted() const;  // "_np" present
  void set_not_persisted();

  // set_timetick, set_wal_term, set_last_confirmed[_self] and, if the stamp has one, `_tc`.
  void Stamp(const AppendStamp& stamp);

  // Exact size of Encode().
  size_t EncodedSize() const;
  std::string Encode() const;
  void EncodeTo(std::string* dst) const;  // appends to *dst
  // Appends the encoding of this message as Stamp(stamp) would leave it; changes nothing.
  void EncodeTo(std::string* dst, const AppendStamp& stamp) const;
  // Appends the encoding of this message with `_tc` set to `trace_context`; changes nothing.
  void EncodeWithTraceContextTo(std::string_view trace_context, std::string* dst) const;
  static absl::StatusOr<MutableMessage> Decode(std::string_view bytes);
  // As Decode, reusing `bytes`'s storage for the payload instead of allocating and copying it
  // (a 1 KiB payload's fresh allocation was a tenth of a node's CPU per produced message).
  static absl::StatusOr<MutableMessage> DecodeOwned(std::string&& bytes);
  // The type of an encoded message without decoding it (no allocation, the payload is skipped):
  // what a scan that filters by type needs. kUnknown when `_t` is absent or does not parse;
  // otherwise malformed bytes may still yield a type (Decode is the check).
  static MessageType DecodeType(std::string_view bytes);

  friend bool operator==(const MutableMessage& a, const MutableMessage& b);

 private:
  // Decode's body; with `storage` (holding `bytes`), the payload takes over its storage.
  static absl::StatusOr<MutableMessage> DecodeFrom(std::string_view bytes, std::string* storage);

  // The reserved keys that every append sets or reads, in ascending key order (the encoding's).
  // A slot is found by a switch on the key and set without moving other entries: as entries of
  // the sorted map they had cost a quarter of the appending thread's instructions (lookups,
  // inserts shifting the entries behind them, `_t` parsed on every type()). Their values share
  // one string, slot_text_, rather than a string each: a message is built and moved several
  // times per append, and ten strings per message made it (and every in-flight append) 300
  // bytes larger, which cost more in cache misses than the slots saved.
  enum Slot : int { kIk, kLc, kLcs, kT, kTc, kTt, kTx, kV, kVc, kWt, kSlotCount };
  static constexpr std::array<std::string_view, kSlotCount> kSlotKeys = {prop::kIdempotencyKey,
                                                                         prop::kLastConfirmed,
                                                                         prop::kLastConfirmedSelf,
                                                                         prop::kType,
                                                                         prop::kTraceContext,
                                                                         prop::kTimeTick,
                                                                         prop::kTxn,
                                                                         prop::kVersion,
                                                                         prop::kVChannel,
                                                                         prop::kWalTerm};
  static constexpr uint32_t Bit(int slot) { return uint32_t{1} << slot; }
  // The slot of `key`; -1 for a key kept in others_.
  static int SlotOf(std::string_view key);

  struct SlotRef {
    uint32_t offset = 0, size = 0;  // into slot_text_
  };

  bool Has(int slot) const { return (present_ & Bit(slot)) != 0; }
  // REQUIRES: Has(slot).
  std::string_view SlotValue(int slot) const {
    return std::string_view(slot_text_.data() + slot_refs_[slot].offset, slot_refs_[slot].size);
  }
  std::optional<std::string_view> Get(int slot) const {
    if (!Has(slot)) return std::nullopt;
    return SlotValue(slot);
  }
  void Assign(int slot, std::string_view value);
  void Erase(int slot);
  void ClearProperties();

  // Calls fn(key, value) in key order for the slots in `present` (valued by value(slot)) and
  // every entry of others_: what encoding and ForEachProperty walk.
  template <typename Value, typename Fn>
  void Merge(uint32_t present, const Value& value, const Fn& fn) const {
    auto it = others_.begin();
    for (; present != 0; present &= present - 1) {
      const int slot = std::countr_zero(present);
      const std::string_view key = kSlotKeys[slot];
      for (; it != others_.end() && std::string_view(it->first) < key; ++it) {
        fn(std::string_view(it->first), std::string_view(it->second));
      }
      fn(key, value(slot));
    }
    for (; it != others_.end(); ++it) fn(std::string_view(it->first), std::string_view(it->second));
  }

  std::string payload_;
  // The values of the slots in present_ (bit s: slot s), anywhere in slot_text_: a value
  // rewritten no longer than before stays in place, a longer one is appended (see Assign).
  std::string slot_text_;
  std::array<SlotRef, kSlotCount> slot_refs_{};
  uint32_t present_ = 0;
  MessageType type_ = MessageType::kUnknown;  // `_t` parsed whenever it is set
  Properties others_;                         // every other key
};

class ImmutableMessage {
 public:
  ImmutableMessage(MessageId id, MutableMessage message);

  const MessageId& id() const { return id_; }
  const MutableMessage& message() const { return message_; }
  // The fields below are resolved once at construction: readers ask for them per message.
  MessageType type() const { return type_; }
  TimeTick timetick() const { return timetick_; }  // TimeTick(0) if the message has none
  std::string_view vchannel() const { return message_.vchannel(); }
  // "_lc" if set; id() if "_lcs" is set; an invalid MessageId if neither decodes.
  MessageId last_confirmed() const { return last_confirmed_; }
  // message().Encode(), computed on the first call (any thread) and kept: sixteen consumers of
  // a tailing pchannel send one encoding. Valid as long as this message.
  std::string_view encoded() const;

 private:
  MessageId id_;
  MutableMessage message_;
  MessageType type_;
  TimeTick timetick_;
  MessageId last_confirmed_;
  // encoded(), computed once; a copy of the message computes its own.
  struct EncodingCache {
    EncodingCache() = default;
    EncodingCache(const EncodingCache&) {}
    EncodingCache& operator=(const EncodingCache&) = delete;
    // Not std::once_flag: glibc's pthread_once makes a futex syscall on every first call,
    // waiter or not (one per consumed message).
    absl::once_flag once;
    std::string bytes;  // written once, under `once`
  };
  mutable EncodingCache encoding_;
};

using ImmutableMessagePtr = std::shared_ptr<const ImmutableMessage>;

}  // namespace kf
