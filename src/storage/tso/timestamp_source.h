// TimestampSource: where a WAL gets its timeticks (docs/semantics.md §1 TSO).
//
// Two implementations: TimestampAllocator (local, persisted high-water mark: standalone and
// the coordinator's oracle) and a streaming node's batches from the coordinator
// (src/streaming/node). Both hand out strictly increasing timestamps for the life of the
// cluster, across restarts, and both honour Observe.
//
// Thread-safety: implementations are thread-safe.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "common/hybrid_time.h"

namespace kf {

class TimestampSource {
 public:
  virtual ~TimestampSource() = default;

  // Allocates `count` (>= 1) consecutive timestamps above every one handed out before and
  // returns the first. Errors: UNAVAILABLE when the source cannot be reached or persisted
  // (nothing was handed out), INVALID_ARGUMENT for count 0.
  virtual absl::StatusOr<TimeTick> Allocate(uint32_t count = 1) = 0;

  // Ensures every later allocation is greater than `t` (e.g. the last timetick found in a
  // recovered log).
  virtual absl::Status Observe(TimeTick t) = 0;
};

}  // namespace kf
