// IvfIndex: the approximate index of one full chunk of a growing segment (docs/search.md): an
// inverted file. Its `nlist` centroids (one per `rows_per_list` rows) are trained by faiss's
// k-means on the chunk's own rows, and each row is listed under its nearest centroid, its
// vector copied into the list (a list is scanned sequentially: reading rows scattered over the
// chunk made a probe memory-bound, no faster than an exact scan). A search scores the
// centroids, probes the `nprobe` best lists and scores their rows exactly with the library's
// own kernels (metric.h).
//
// Why this shape (measured in docs/search.md): faiss 1.7.3 as Debian 12 ships it scans with
// its scalar reference kernels (fvec_L2sqr_ref), several times slower than metric.h's AVX2 —
// its IndexIVFFlat over 8192-row chunks searched slower than an exact scan. So faiss trains
// the centroids (k-means with BLAS) and the lists are scanned here. A row that could enter the
// top-k is checked for visibility (MVCC, deletes) and the pk range before it is admitted, so
// hidden rows never take a place in the result and cost no recall (no over-fetching; faiss's
// and hnswlib's HNSW of these versions take no filter).
//
// Immutable once built. Thread-safety: Search is const and thread-safe. Errors: Build returns
// INTERNAL when faiss refuses (the chunk then stays searched exactly).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "search/metric.h"

namespace kf::search {

class Chunk;
class TopK;
struct SearchFilter;

struct IndexOptions {
  size_t rows_per_list = 64;  // nlist = rows / rows_per_list
  size_t nprobe = 16;         // lists probed per chunk when a search does not say
  int train_iterations = 10;  // k-means iterations
};

class IvfIndex {
 public:
  // Indexes `rows` vectors of `dim` floats at `vectors` (row-major, as stored: normalised for
  // COSINE).
  static absl::StatusOr<std::unique_ptr<IvfIndex>> Build(const float* vectors, size_t rows,
                                                         uint32_t dim, Metric metric,
                                                         const IndexOptions& options);

  // What an index is made of — what a sealed segment's object stores of it: `centroids`
  // (nlist * dim), `list_begin` (nlist + 1 ascending offsets from 0 to rows), `list_rows` (a
  // permutation of the chunk's rows, grouped by list) and `list_vectors` (rows * dim: the
  // vector of list_rows[i] at i * dim).
  struct Parts {
    std::span<const float> centroids;
    std::span<const uint32_t> list_begin;
    std::span<const uint32_t> list_rows;
    std::span<const float> list_vectors;
  };
  // The index of a chunk of `rows` rows over `parts` as they are — views, not copies: the
  // caller keeps their memory alive as long as the index (a chunk loaded from an object holds
  // the object). No training, no gathering. INVALID_ARGUMENT when the parts do not fit
  // together (the permutation is checked by whoever inverts it: the loaded chunk).
  static absl::StatusOr<std::unique_ptr<IvfIndex>> View(size_t rows, uint32_t dim, Metric metric,
                                                        const IndexOptions& options, Parts parts);

  // Pushes into `top` the best rows of `chunk` (the chunk this index was built from) among
  // those `filter` admits, probing `nprobe` lists (0: the options' default).
  void Search(const Chunk& chunk, const float* query, size_t nprobe, const SearchFilter& filter,
              TopK* top) const;

  size_t nlist() const { return list_begin_.size() - 1; }
  // The parts View takes.
  Parts parts() const {
    return {.centroids = centroids_,
            .list_begin = list_begin_,
            .list_rows = rows_,
            .list_vectors = vectors_};
  }
  // Bytes held: a built index's centroids, lists' row ids and vector copies; a view holds
  // none (its parts are its chunk's object's, counted with the chunk).
  size_t memory_bytes() const {
    if (owned_ == nullptr) return 0;
    return (centroids_.size() + vectors_.size()) * sizeof(float) +
           (list_begin_.size() + rows_.size()) * sizeof(uint32_t);
  }

 private:
  struct Owned {
    std::vector<float> centroids;
    std::vector<uint32_t> list_begin;
    std::vector<uint32_t> rows;
    std::vector<float> vectors;
  };
  IvfIndex(uint32_t dim, Metric metric, IndexOptions options)
      : dim_(dim), metric_(metric), options_(options) {}

  const uint32_t dim_;
  const Metric metric_;
  const IndexOptions options_;
  std::unique_ptr<const Owned> owned_;    // Build's parts; null for a View
  std::span<const float> centroids_;      // nlist * dim
  std::span<const uint32_t> list_begin_;  // list i's rows: rows_[list_begin_[i], list_begin_[i+1])
  std::span<const uint32_t> rows_;        // offsets in the chunk, grouped by list
  std::span<const float> vectors_;        // rows_[i]'s vector at i * dim
};

}  // namespace kf::search
