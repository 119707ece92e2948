#include "search/flat_search.h"

namespace kf::search {

void SearchChunk(const SegmentSnapshot& snap, size_t chunk, size_t begin, size_t end, Metric metric,
                 uint32_t dim, const float* query, const SearchFilter& filter, TopK* top) {
  const Chunk& c = *snap.chunks[chunk];
  const Kernel kernel = metric == Metric::kL2 ? L2SqrKernel() : InnerProductKernel();
  const float sign = metric == Metric::kL2 ? 1.0f : -1.0f;
  for (size_t row = begin; row < end; ++row) {
    const int64_t pk = c.pk(row);
    if (!c.VisibleAt(row, filter.ts) || pk < filter.min_pk || pk > filter.max_pk) continue;
    const float score = sign * kernel(query, c.vector(row), dim);
    if (top->Admits(score)) top->Push({score, pk});
  }
}

}  // namespace kf::search
