#include "search/ivf_index.h"

#include <faiss/Clustering.h>
#include <faiss/IndexFlat.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "absl/strings/str_cat.h"
#include "search/flat_search.h"
#include "search/growing_segment.h"
#include "search/top_k.h"

namespace kf::search {
namespace {

// The list of a vector: its best centroid by the metric's score.
size_t NearestList(const std::vector<float>& centroids, size_t nlist, Metric metric, const float* v,
                   uint32_t dim) {
  size_t best = 0;
  float best_score = 0;
  for (size_t c = 0; c < nlist; ++c) {
    const float s = Score(metric, v, centroids.data() + c * dim, dim);
    if (c == 0 || s < best_score) {
      best = c;
      best_score = s;
    }
  }
  return best;
}

}  // namespace

absl::StatusOr<std::unique_ptr<IvfIndex>> IvfIndex::Build(const float* vectors, size_t rows,
                                                          uint32_t dim, Metric metric,
                                                          const IndexOptions& options) {
  const size_t nlist = std::max<size_t>(1, rows / std::max<size_t>(1, options.rows_per_list));
  std::vector<float> centroids;
  try {
    faiss::ClusteringParameters cp;
    cp.niter = options.train_iterations;
    cp.spherical = metric != Metric::kL2;  // IP, COSINE: centroids on the unit sphere
    cp.max_points_per_centroid = static_cast<int>(rows / nlist + 1);  // every row trains
    cp.min_points_per_centroid = 1;
    faiss::Clustering kmeans(static_cast<int>(dim), static_cast<int>(nlist), cp);
    faiss::IndexFlatL2 assign(static_cast<faiss::Index::idx_t>(dim));
    kmeans.train(static_cast<faiss::Index::idx_t>(rows), vectors, assign);
    centroids = std::move(kmeans.centroids);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("training the IVF centroids of ", rows, " rows: ", e.what()));
  }
  // Counting sort of the rows by list, then each list's vector copies gathered.
  auto owned = std::make_unique<Owned>();
  std::vector<uint32_t> list_of(rows);
  std::vector<uint32_t>& list_begin = owned->list_begin;
  list_begin.assign(nlist + 1, 0);
  for (size_t r = 0; r < rows; ++r) {
    list_of[r] =
        static_cast<uint32_t>(NearestList(centroids, nlist, metric, vectors + r * dim, dim));
    ++list_begin[list_of[r] + 1];
  }
  for (size_t i = 0; i < nlist; ++i) list_begin[i + 1] += list_begin[i];
  owned->rows.resize(rows);
  std::vector<uint32_t> next(list_begin.begin(), list_begin.end() - 1);
  for (size_t r = 0; r < rows; ++r) owned->rows[next[list_of[r]]++] = static_cast<uint32_t>(r);
  owned->vectors.resize(rows * dim);
  for (size_t at = 0; at < rows; ++at) {
    std::copy_n(vectors + size_t{owned->rows[at]} * dim, dim, owned->vectors.data() + at * dim);
  }
  owned->centroids = std::move(centroids);
  std::unique_ptr<IvfIndex> index(new IvfIndex(dim, metric, options));
  index->centroids_ = owned->centroids;
  index->list_begin_ = owned->list_begin;
  index->rows_ = owned->rows;
  index->vectors_ = owned->vectors;
  index->owned_ = std::move(owned);
  return index;
}

absl::StatusOr<std::unique_ptr<IvfIndex>> IvfIndex::View(size_t rows, uint32_t dim, Metric metric,
                                                         const IndexOptions& options, Parts parts) {
  const size_t nlist = parts.list_begin.empty() ? 0 : parts.list_begin.size() - 1;
  if (nlist == 0 || parts.centroids.size() != nlist * dim || parts.list_rows.size() != rows ||
      parts.list_vectors.size() != rows * dim || parts.list_begin.front() != 0 ||
      parts.list_begin.back() != rows || !std::ranges::is_sorted(parts.list_begin)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "IVF parts do not fit: ", nlist, " lists, ", parts.centroids.size(),
        " centroid values for dim ", dim, ", ", parts.list_rows.size(), " listed rows of ", rows,
        ", ", parts.list_vectors.size(), " list vector values"));
  }
  std::unique_ptr<IvfIndex> index(new IvfIndex(dim, metric, options));
  index->centroids_ = parts.centroids;
  index->list_begin_ = parts.list_begin;
  index->rows_ = parts.list_rows;
  index->vectors_ = parts.list_vectors;
  return index;
}

void IvfIndex::Search(const Chunk& chunk, const float* query, size_t nprobe,
                      const SearchFilter& filter, TopK* top) const {
  const size_t nlist = this->nlist();
  nprobe = std::min(nlist, nprobe == 0 ? options_.nprobe : nprobe);
  const Kernel kernel = metric_ == Metric::kL2 ? L2SqrKernel() : InnerProductKernel();
  const float sign = metric_ == Metric::kL2 ? 1.0f : -1.0f;
  // The nprobe best lists: (score, list), best first.
  std::vector<std::pair<float, uint32_t>> lists(nlist);
  for (size_t c = 0; c < nlist; ++c) {
    lists[c] = {sign * kernel(query, centroids_.data() + c * dim_, dim_), static_cast<uint32_t>(c)};
  }
  std::partial_sort(lists.begin(), lists.begin() + static_cast<std::ptrdiff_t>(nprobe),
                    lists.end());
  for (size_t p = 0; p < nprobe; ++p) {
    const uint32_t list = lists[p].second;
    for (uint32_t i = list_begin_[list]; i < list_begin_[list + 1]; ++i) {
      const float score = sign * kernel(query, vectors_.data() + size_t{i} * dim_, dim_);
      if (!top->Admits(score)) continue;
      const uint32_t row = rows_[i];
      const int64_t pk = chunk.pk(row);
      if (!chunk.VisibleAt(row, filter.ts) || pk < filter.min_pk || pk > filter.max_pk) continue;
      top->Push({score, pk});
    }
  }
}

}  // namespace kf::search
