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
  // Counting sort of the rows by list; FromParts gathers the lists' vector copies.
  std::vector<uint32_t> list_of(rows);
  std::vector<uint32_t> list_begin(nlist + 1, 0);
  for (size_t r = 0; r < rows; ++r) {
    list_of[r] =
        static_cast<uint32_t>(NearestList(centroids, nlist, metric, vectors + r * dim, dim));
    ++list_begin[list_of[r] + 1];
  }
  for (size_t i = 0; i < nlist; ++i) list_begin[i + 1] += list_begin[i];
  std::vector<uint32_t> list_rows(rows);
  std::vector<uint32_t> next(list_begin.begin(), list_begin.end() - 1);
  for (size_t r = 0; r < rows; ++r) list_rows[next[list_of[r]]++] = static_cast<uint32_t>(r);
  return FromParts(vectors, rows, dim, metric, options, std::move(centroids), std::move(list_begin),
                   std::move(list_rows));
}

absl::StatusOr<std::unique_ptr<IvfIndex>> IvfIndex::FromParts(const float* vectors, size_t rows,
                                                              uint32_t dim, Metric metric,
                                                              const IndexOptions& options,
                                                              std::vector<float> centroids,
                                                              std::vector<uint32_t> list_begin,
                                                              std::vector<uint32_t> list_rows) {
  const size_t nlist = list_begin.empty() ? 0 : list_begin.size() - 1;
  if (nlist == 0 || centroids.size() != nlist * dim || list_rows.size() != rows ||
      list_begin.front() != 0 || list_begin.back() != rows ||
      !std::is_sorted(list_begin.begin(), list_begin.end())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "IVF parts do not fit: ", nlist, " lists, ", centroids.size(), " centroid values for dim ",
        dim, ", ", list_rows.size(), " listed rows of ", rows));
  }
  std::vector<bool> seen(rows);
  for (uint32_t r : list_rows) {
    if (r >= rows || seen[r]) {
      return absl::InvalidArgumentError(
          absl::StrCat("IVF lists name row ", r, " of ", rows, r >= rows ? "" : " twice"));
    }
    seen[r] = true;
  }
  std::unique_ptr<IvfIndex> index(new IvfIndex(dim, metric, options));
  index->centroids_ = std::move(centroids);
  index->list_begin_ = std::move(list_begin);
  index->rows_ = std::move(list_rows);
  index->vectors_.resize(rows * dim);
  for (size_t at = 0; at < rows; ++at) {
    std::copy_n(vectors + size_t{index->rows_[at]} * dim, dim, index->vectors_.data() + at * dim);
  }
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
