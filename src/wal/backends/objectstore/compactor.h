// Compaction of sealed segments (docs/objectstore-wal.md "Compaction"): runs of consecutive
// small blocks become one object, their concatenation, so that reading a segment back takes a
// few large GETs instead of one per block. The blocks keep their ids; the metadata lists the
// compacted runs, and readers that miss a deleted block look there.
//
// Pure functions over borrowed stores; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "wal/backends/objectstore/log_view.h"

namespace kf::wal::objectstore {

// Consecutive blocks of at most `target` bytes together; only runs of two or more blocks.
std::vector<MergedRun> PlanCompaction(const std::vector<uint64_t>& block_bytes, uint64_t target);

// Stores the compacted object of `run` of `segment` (its blocks fetched through `view`).
absl::Status WriteMerged(LogView* view, uint64_t segment, const MergedRun& run,
                         absl::Time deadline);

}  // namespace kf::wal::objectstore
