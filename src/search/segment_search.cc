#include "search/segment_search.h"

namespace kf::search {

void SearchSegment(const SegmentSnapshot& snap, Metric metric, uint32_t dim, const float* query,
                   const SearchFilter& filter, size_t nprobe, TopK* top) {
  for (size_t i = 0; i < snap.chunks.size(); ++i) {
    const Chunk& chunk = *snap.chunks[i];
    const size_t rows = snap.RowsIn(i);
    // An index exists only for a full chunk, so it covers exactly the rows the snapshot has.
    if (const IvfIndex* index = chunk.index(); index != nullptr && rows == snap.chunk_rows) {
      index->Search(chunk, query, nprobe, filter, top);
    } else {
      SearchChunk(snap, i, 0, rows, metric, dim, query, filter, top);
    }
  }
}

}  // namespace kf::search
