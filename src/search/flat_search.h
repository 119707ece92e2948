// Exact search over a segment snapshot: every visible row is scored (metric.h) and the best k
// kept (top_k.h). Visibility and the pk range are checked before a row is scored, inside the
// scan, so a search with most rows hidden still returns the k best of those it may see.
//
// Pure functions over immutable snapshots: thread-safe. Errors: none (the caller validates).
#pragma once

#include <cstdint>
#include <limits>

#include "search/growing_segment.h"
#include "search/top_k.h"

namespace kf::search {

// What a search may see besides its vector.
struct SearchFilter {
  uint64_t ts = 0;  // MVCC: rows inserted at <= ts and not deleted at <= ts
  int64_t min_pk = std::numeric_limits<int64_t>::min();
  int64_t max_pk = std::numeric_limits<int64_t>::max();
};

// Scores the rows [begin, end) of chunk `chunk` in `snap` for `query` (as stored: normalised
// for COSINE) and pushes the admitted ones into `top`.
void SearchChunk(const SegmentSnapshot& snap, size_t chunk, size_t begin, size_t end, Metric metric,
                 uint32_t dim, const float* query, const SearchFilter& filter, TopK* top);

}  // namespace kf::search
