// StrongId<Tag, T>: a typed wrapper around an integer so a Term cannot be passed where a
// TimeTick is expected (Redpanda's named types). Zero-cost, totally ordered, hashable.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>

namespace kf {

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

struct TermTag {};
// The ownership generation of a pchannel; grows on every reassignment (docs/semantics.md §1).
using Term = StrongId<TermTag, int64_t>;

struct SegmentIdTag {};
using SegmentId = StrongId<SegmentIdTag, uint64_t>;

struct TxnIdTag {};
using TxnId = StrongId<TxnIdTag, int64_t>;

}  // namespace kf

template <typename Tag, typename T>
struct std::hash<kf::StrongId<Tag, T>> {
  size_t operator()(const kf::StrongId<Tag, T>& id) const { return std::hash<T>{}(id.value()); }
};
