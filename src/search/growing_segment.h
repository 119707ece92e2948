// GrowingSegment: the rows of one shard and partition as they are applied from the WAL, stored
// by column in fixed-size chunks (docs/search.md): pks, vectors (normalised for COSINE), the
// timestamp each row became visible at, and the timestamp it was deleted at.
//
// Visibility (MVCC): a search at timestamp T sees row r iff r.inserted <= T < r.deleted. A
// Delete(pk, t) sets `deleted = t` on every row of `pk` applied before it that is not deleted
// yet; rows and deletes are applied in timestamp order (a transaction's, all at its commit
// timestamp, in their order inside it), so one column answers every T. A search must not
// ask for a T beyond what was applied (the shard's tSafe): rows and deletes after it are not
// there yet.
//
// Thread-safety: one writer (Insert, Delete) at a time, any number of readers (Snapshot, Get,
// the counters) concurrently with it. A row is written into its chunk before the row count
// that covers it is published (release); a reader takes the count (acquire) and then the chunk
// table, so every row it sees is complete, and chunks are never moved or freed while a reader
// holds a snapshot. `deleted` is one atomic per row, written before the shard publishes its
// tSafe, which the reader waited for.
// Errors: none; the caller checks dims and values (the WAL's payload validation).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "search/ivf_index.h"
#include "search/metric.h"

namespace kf::search {

class IndexBuilder;

// The bytes of growing data a node holds (chunks, pk indexes, IVF indexes), kept exact by the
// objects that hold them: each adds what it allocates and takes it back when freed. Read
// without a lock on every Insert the node admits (the growing-memory limit, docs/search.md).
class MemoryAccount {
 public:
  void Add(int64_t delta) { bytes_.fetch_add(delta, std::memory_order_relaxed); }
  size_t bytes() const {
    return static_cast<size_t>(std::max<int64_t>(0, bytes_.load(std::memory_order_relaxed)));
  }

 private:
  std::atomic<int64_t> bytes_{0};
};

inline constexpr uint64_t kNotDeleted = std::numeric_limits<uint64_t>::max();
inline constexpr uint32_t kNoRow = std::numeric_limits<uint32_t>::max();
// A segment holds fewer rows than kNoRow (the shard starts a new one before).
inline constexpr size_t kMaxSegmentRows = kNoRow - 1;

struct SegmentOptions {
  uint32_t dim = 0;
  Metric metric = Metric::kL2;
  size_t chunk_rows = 8192;  // rows per chunk: the unit an index is built for
  // Builds the approximate index of each chunk once it is full, in the background; null: every
  // chunk is searched exactly.
  std::shared_ptr<IndexBuilder> indexer;
  // Where the segment's bytes are counted; null: nowhere.
  std::shared_ptr<MemoryAccount> account;
};

// One chunk of rows, filled front to back by the writer.
class Chunk {
 public:
  Chunk(size_t capacity, uint32_t dim, std::shared_ptr<MemoryAccount> account);
  ~Chunk();

  // Bytes of a growing chunk's columns (allocated whole) per row of capacity.
  static size_t BytesPerRow(uint32_t dim);
  // Bytes this chunk holds in the process's memory (counted in its account): a growing chunk's
  // columns; a loaded one's delete column and row maps, plus its part of the object when that
  // is in the heap (a mapped object's pages are the page cache's). Its index's are apart.
  size_t memory_bytes() const { return memory_bytes_; }

  const float* vector(size_t row) const {
    return vectors_ + (slot_of_row_ == nullptr ? row : size_t{slot_of_row_[row]}) * dim_;
  }
  size_t capacity() const { return capacity_; }
  int64_t pk(size_t row) const { return pks_[row]; }
  uint64_t inserted(size_t row) const { return inserted_[row]; }
  uint64_t deleted(size_t row) const { return deleted_[row].load(std::memory_order_relaxed); }
  bool VisibleAt(size_t row, uint64_t ts) const { return inserted(row) <= ts && ts < deleted(row); }
  // The approximate index of the (full) chunk once built; null before.
  const IvfIndex* index() const { return index_.load(std::memory_order_acquire); }

 private:
  friend class GrowingSegment;
  friend class IndexBuilder;
  friend class SealedSegmentCodec;  // sealed_segment_format.cc: writes a decoded chunk's columns
  // Called once, by the builder.
  void PublishIndex(std::unique_ptr<IvfIndex> index);

  // A chunk loaded from a sealed segment's object (sealed_segment_format.cc): its pks,
  // insert timestamps and vectors are views into `backing`, which it keeps; `slot_of_row`
  // (null: the identity) places a row's vector when they are stored in its index's list order.
  // `heap_bytes`: its part of the object when the object is in the heap (counted), else 0.
  Chunk(size_t rows, uint32_t dim, std::shared_ptr<MemoryAccount> account,
        std::shared_ptr<const void> backing, const int64_t* pks, const uint64_t* inserted,
        const float* vectors, std::unique_ptr<uint32_t[]> slot_of_row, size_t heap_bytes);

  const size_t capacity_;
  const uint32_t dim_;
  // A growing chunk's columns (the writer fills them); null in a loaded one.
  std::unique_ptr<float[]> owned_vectors_;
  std::unique_ptr<int64_t[]> owned_pks_;
  std::unique_ptr<uint64_t[]> owned_inserted_;
  const std::shared_ptr<const void> backing_;  // a loaded chunk's object
  const float* const vectors_;
  const int64_t* const pks_;
  const uint64_t* const inserted_;
  const std::unique_ptr<uint32_t[]> slot_of_row_;
  std::unique_ptr<std::atomic<uint64_t>[]> deleted_;
  std::unique_ptr<uint32_t[]> previous_of_pk_;  // the row of the same pk before, or kNoRow
  std::unique_ptr<IvfIndex> owned_index_;       // written once, before index_ publishes it
  std::atomic<const IvfIndex*> index_{nullptr};
  const size_t memory_bytes_;
  const std::shared_ptr<MemoryAccount> account_;
};

// What a reader scans: the rows published when it was taken, chunk by chunk.
struct SegmentSnapshot {
  std::vector<std::shared_ptr<const Chunk>> chunks;
  size_t rows = 0;
  size_t chunk_rows = 0;

  // Rows of chunk `i` in this snapshot.
  size_t RowsIn(size_t i) const {
    const size_t begin = i * chunk_rows;
    return rows <= begin ? 0 : std::min(chunk_rows, rows - begin);
  }
};

class GrowingSegment {
 public:
  explicit GrowingSegment(SegmentOptions options);
  ~GrowingSegment();
  GrowingSegment(const GrowingSegment&) = delete;
  GrowingSegment& operator=(const GrowingSegment&) = delete;

  // A sealed segment of `rows` rows held by `chunks` (from its object, sealed_segment_format.h;
  // each chunk full but possibly the last). Its pk index is rebuilt by the first Delete or Get
  // (a loaded segment is searched long before a pk is looked up in it, if ever: its load does
  // not wait for the index). It takes no Insert; Deletes apply as to any segment. INVALID_ARGUMENT
  // when the chunks do not hold `rows` rows of options.chunk_rows each.
  static absl::StatusOr<std::unique_ptr<GrowingSegment>> FromChunks(
      std::vector<std::shared_ptr<Chunk>> chunks, size_t rows, SegmentOptions options);

  const SegmentOptions& options() const { return options_; }

  // --- The writer.
  // Appends pks.size() rows visible from `ts`; vectors is row-major, pks.size() * dim floats.
  // rows() + pks.size() <= kMaxSegmentRows. REQUIRES: !sealed().
  void Insert(std::span<const int64_t> pks, std::span<const float> vectors, uint64_t ts);
  // Hides, from `ts` on, every row of `pk` inserted so far; returns how many it hid.
  size_t Delete(int64_t pk, uint64_t ts);
  // Takes `original`'s deletes as they are now: this segment is `original` read back from its
  // object (the same rows in the same order; a delete that hit it since is not in the object).
  // INVALID_ARGUMENT, and nothing changes, when the rows or chunks differ. The caller keeps
  // `original` from taking deletes meanwhile.
  absl::Status TakeDeletesOf(const GrowingSegment& original);
  // Builds the pk index now unless it exists (FromChunks leaves it to the first lookup): a
  // caller about to look a pk up under a lock of its own calls this first.
  void EnsurePkIndex() const;
  bool has_pk_index() const { return pk_indexed_.load(std::memory_order_acquire); }
  // Whether every full chunk has its index (true without an indexer: none ever gets one).
  bool FullChunksIndexed() const;
  // No more rows: the segment keeps answering searches and taking deletes. A partial last chunk
  // is copied into one of its size (a segment sealed early, by age or a flush, holds no unused
  // capacity); readers holding the old one keep it until they let go.
  void Seal();
  bool sealed() const { return sealed_.load(std::memory_order_relaxed); }

  // --- Readers.
  SegmentSnapshot Snapshot() const;
  // The vector of every row of `pk` visible at `ts` (normally one), appended to `out`.
  void Get(int64_t pk, uint64_t ts, std::vector<std::vector<float>>* out) const;
  size_t rows() const { return rows_.load(std::memory_order_acquire); }
  // Bytes held: chunks (allocated whole) and the pk index.
  size_t memory_bytes() const { return memory_bytes_.load(std::memory_order_relaxed); }
  // Bytes held by the chunks' approximate indexes built so far.
  size_t index_bytes() const;

 private:
  // A row's place: chunk * chunk_rows + offset.
  Chunk& ChunkOf(uint32_t row) const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return *chunks_[row / options_.chunk_rows];
  }
  // Makes row `row` (at `at` in `chunk`, its pk written) the newest of its pk.
  void IndexPkLocked(Chunk& chunk, size_t at, size_t row) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Indexes every row's pk unless done (FromChunks leaves it to the first lookup).
  void EnsurePkIndexLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void UpdateMemoryLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SegmentOptions options_;
  std::atomic<bool> sealed_{false};
  std::atomic<size_t> rows_{0};
  // Mutable, as the pk index: the first lookup builds it, and Get is const.
  mutable std::atomic<size_t> memory_bytes_{0};
  mutable absl::Mutex mu_;
  mutable size_t pk_index_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // what the account holds for the map
  std::vector<std::shared_ptr<Chunk>> chunks_ ABSL_GUARDED_BY(mu_);
  // pk -> its newest row; the older ones are chained through Chunk::previous_of_pk_. Holds
  // every row once pk_indexed_.
  mutable absl::flat_hash_map<int64_t, uint32_t> newest_row_of_pk_ ABSL_GUARDED_BY(mu_);
  mutable std::atomic<bool> pk_indexed_{true};  // written under mu_
};

}  // namespace kf::search
