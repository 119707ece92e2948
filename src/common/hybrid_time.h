// The hybrid timestamp (TSO) of docs/semantics.md §1:
// physical milliseconds << 18 | logical counter.
#pragma once

#include <cstdint>

#include "common/strong_id.h"

namespace kf {

struct TimeTickTag {};
// A timetick: a hybrid timestamp stamped on every message in WAL order.
using TimeTick = StrongId<TimeTickTag, uint64_t>;

inline constexpr int kLogicalBits = 18;
inline constexpr uint64_t kLogicalMask = (uint64_t{1} << kLogicalBits) - 1;

constexpr TimeTick ComposeTimeTick(uint64_t physical_ms, uint64_t logical) {
  return TimeTick((physical_ms << kLogicalBits) | (logical & kLogicalMask));
}
constexpr uint64_t PhysicalMs(TimeTick t) { return t.value() >> kLogicalBits; }
constexpr uint64_t Logical(TimeTick t) { return t.value() & kLogicalMask; }

}  // namespace kf
