// Search over a segment snapshot: each chunk through its approximate index once it has one
// (ivf_index.h), exactly otherwise (flat_search.h) — so a row is searchable the moment it is
// applied, and the newest rows, in the chunk being filled, are always scored exactly. The
// filter (MVCC, pk range) is applied inside both, before a row is scored.
//
// Pure functions over immutable snapshots: thread-safe. Errors: none (the caller validates).
#pragma once

#include <cstddef>
#include <cstdint>

#include "search/flat_search.h"
#include "search/growing_segment.h"
#include "search/top_k.h"

namespace kf::search {

// `nprobe`: the lists an indexed chunk probes (0: its index's default).
void SearchSegment(const SegmentSnapshot& snap, Metric metric, uint32_t dim, const float* query,
                   const SearchFilter& filter, size_t nprobe, TopK* top);

}  // namespace kf::search
