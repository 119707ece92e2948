// Keepalive arithmetic shared by the append side (TxnManager) and the read side (TxnBuffer), so
// both agree to the tick on when a transaction expires (docs/semantics.md §3).
//
// A transaction's deadline is `last activity timetick + keepalive`, where the last activity is
// its BeginTxn or its latest body. A message (or watermark) with a timetick strictly greater
// than the deadline finds the transaction expired; a body exactly at the deadline is in time.
// Pure functions: thread-safe, no errors.
#pragma once

#include <cstdint>
#include <limits>

#include "common/hybrid_time.h"

namespace kf::wal {

// docs/semantics.md §3: BeginTxn's keepalive when the producer gives 0.
inline constexpr int64_t kDefaultTxnKeepaliveMs = 10'000;

// The keepalive a BeginTxn with `keepalive_ms` gets: the default for 0, else unchanged.
// REQUIRES: keepalive_ms >= 0 (the manager rejects negative values before calling this).
constexpr int64_t EffectiveKeepaliveMs(int64_t keepalive_ms) {
  return keepalive_ms == 0 ? kDefaultTxnKeepaliveMs : keepalive_ms;
}

// `last + keepalive` in hybrid-timestamp units (milliseconds live above the logical bits).
// Saturates instead of wrapping: an absurd keepalive means "never", not "already expired".
constexpr TimeTick TxnDeadline(TimeTick last, int64_t keepalive_ms) {
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  const uint64_t ms = keepalive_ms < 0 ? 0 : static_cast<uint64_t>(keepalive_ms);
  if (ms > (kMax >> kLogicalBits)) return TimeTick(kMax);
  const uint64_t delta = ms << kLogicalBits;
  if (last.value() > kMax - delta) return TimeTick(kMax);
  return TimeTick(last.value() + delta);
}

}  // namespace kf::wal
