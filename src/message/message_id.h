// MessageId: the position of a message in one pchannel's WAL, as assigned by its backend.
//
// Totally ordered within a pchannel (docs/semantics.md §1). Every backend fits the shape (segment,
// entry): the local backend uses a single global offset (segment = 0), the object-storage and
// quorum backends use (segment id, entry id in segment), as Woodpecker does.
//
// Byte form (the `_lc` property, the wire, checkpoints): kind u8, varint segment, varint entry.
// Text form (kfctl output, --from/--after): "<kind>:<entry>" for local, "<kind>:<seg>.<entry>"
// otherwise, e.g. "local:42", "os:3.17". Both round-trip exactly.
#pragma once

#include <compare>
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kf {

enum class WalKind : uint8_t { kInvalid = 0, kLocal = 1, kObjectStore = 2, kQuorum = 3 };

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
  std::string ToText() const;
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

}  // namespace kf
