#include "search/growing_segment.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "search/index_builder.h"

namespace kf::search {

size_t Chunk::BytesPerRow(uint32_t dim) {
  return dim * sizeof(float) + sizeof(int64_t) + 2 * sizeof(uint64_t) + sizeof(uint32_t);
}

Chunk::Chunk(size_t capacity, uint32_t dim, std::shared_ptr<MemoryAccount> account)
    : capacity_(capacity),
      dim_(dim),
      owned_vectors_(new float[capacity * dim]),
      owned_pks_(new int64_t[capacity]),
      owned_inserted_(new uint64_t[capacity]),
      vectors_(owned_vectors_.get()),
      pks_(owned_pks_.get()),
      inserted_(owned_inserted_.get()),
      deleted_(new std::atomic<uint64_t>[capacity]),
      previous_of_pk_(new uint32_t[capacity]),
      memory_bytes_(capacity * BytesPerRow(dim)),
      account_(std::move(account)) {
  if (account_ != nullptr) account_->Add(static_cast<int64_t>(memory_bytes_));
}

Chunk::Chunk(size_t rows, uint32_t dim, std::shared_ptr<MemoryAccount> account,
             std::shared_ptr<const void> backing, const int64_t* pks, const uint64_t* inserted,
             const float* vectors, std::unique_ptr<uint32_t[]> slot_of_row, size_t heap_bytes)
    : capacity_(rows),
      dim_(dim),
      backing_(std::move(backing)),
      vectors_(vectors),
      pks_(pks),
      inserted_(inserted),
      slot_of_row_(std::move(slot_of_row)),
      deleted_(new std::atomic<uint64_t>[rows]),
      previous_of_pk_(new uint32_t[rows]),
      memory_bytes_(rows * (sizeof(uint64_t) + sizeof(uint32_t) +
                            (slot_of_row_ == nullptr ? 0 : sizeof(uint32_t))) +
                    heap_bytes),
      account_(std::move(account)) {
  if (account_ != nullptr) account_->Add(static_cast<int64_t>(memory_bytes_));
}

Chunk::~Chunk() {
  if (account_ == nullptr) return;
  const size_t index = owned_index_ == nullptr ? 0 : owned_index_->memory_bytes();
  account_->Add(-static_cast<int64_t>(memory_bytes_ + index));
}

void Chunk::PublishIndex(std::unique_ptr<IvfIndex> index) {
  if (account_ != nullptr) account_->Add(static_cast<int64_t>(index->memory_bytes()));
  owned_index_ = std::move(index);
  index_.store(owned_index_.get(), std::memory_order_release);
}

GrowingSegment::GrowingSegment(SegmentOptions options) : options_(std::move(options)) {}

GrowingSegment::~GrowingSegment() {
  absl::MutexLock lock(&mu_);
  if (options_.account != nullptr) options_.account->Add(-static_cast<int64_t>(pk_index_bytes_));
}

absl::StatusOr<std::unique_ptr<GrowingSegment>> GrowingSegment::FromChunks(
    std::vector<std::shared_ptr<Chunk>> chunks, size_t rows, SegmentOptions options) {
  const size_t chunk_rows = options.chunk_rows;
  if (chunk_rows == 0 || rows > kMaxSegmentRows ||
      chunks.size() != (rows + chunk_rows - 1) / chunk_rows) {
    return absl::InvalidArgumentError(
        absl::StrCat(chunks.size(), " chunks for ", rows, " rows of ", chunk_rows, " per chunk"));
  }
  for (size_t i = 0; i < chunks.size(); ++i) {
    const size_t in_chunk = std::min(chunk_rows, rows - i * chunk_rows);
    if (chunks[i]->dim_ != options.dim || chunks[i]->capacity_ < in_chunk) {
      return absl::InvalidArgumentError(absl::StrCat("chunk ", i, " holds ", chunks[i]->capacity_,
                                                     " rows of dim ", chunks[i]->dim_));
    }
  }
  std::unique_ptr<GrowingSegment> segment(new GrowingSegment(std::move(options)));
  absl::MutexLock lock(&segment->mu_);
  segment->chunks_ = std::move(chunks);
  segment->pk_indexed_.store(false, std::memory_order_relaxed);
  segment->UpdateMemoryLocked();
  segment->rows_.store(rows, std::memory_order_release);
  segment->sealed_.store(true, std::memory_order_relaxed);  // its chunks come sized
  return segment;
}

void GrowingSegment::Seal() {
  absl::MutexLock lock(&mu_);
  if (sealed()) return;
  const size_t rows = rows_.load(std::memory_order_relaxed);
  const size_t in_last = rows % options_.chunk_rows;
  if (in_last != 0 && chunks_.back()->capacity_ > in_last) {
    const Chunk& old = *chunks_.back();
    auto fit = std::make_shared<Chunk>(in_last, options_.dim, options_.account);
    std::memcpy(fit->owned_vectors_.get(), old.vectors_, in_last * options_.dim * sizeof(float));
    std::memcpy(fit->owned_pks_.get(), old.pks_, in_last * sizeof(int64_t));
    std::memcpy(fit->owned_inserted_.get(), old.inserted_, in_last * sizeof(uint64_t));
    std::memcpy(fit->previous_of_pk_.get(), old.previous_of_pk_.get(), in_last * sizeof(uint32_t));
    // Deletes are written under mu_ (held): none is lost between this copy and the swap.
    for (size_t i = 0; i < in_last; ++i) {
      fit->deleted_[i].store(old.deleted(i), std::memory_order_relaxed);
    }
    chunks_.back() = std::move(fit);
    UpdateMemoryLocked();
  }
  sealed_.store(true, std::memory_order_relaxed);
}

void GrowingSegment::Insert(std::span<const int64_t> pks, std::span<const float> vectors,
                            uint64_t ts) {
  assert(!sealed());
  const size_t dim = options_.dim;
  const size_t chunk_rows = options_.chunk_rows;
  size_t row = rows_.load(std::memory_order_relaxed);  // only this writer changes it
  std::vector<std::shared_ptr<Chunk>> filled;          // to index once published
  absl::MutexLock lock(&mu_);
  for (size_t i = 0; i < pks.size(); ++i, ++row) {
    if (row % chunk_rows == 0)
      chunks_.push_back(std::make_shared<Chunk>(chunk_rows, dim, options_.account));
    Chunk& chunk = *chunks_.back();
    const size_t at = row % chunk_rows;
    float* v = chunk.owned_vectors_.get() + at * dim;
    std::memcpy(v, vectors.data() + i * dim, dim * sizeof(float));
    if (options_.metric == Metric::kCosine) Normalize(v, dim);
    chunk.owned_pks_[at] = pks[i];
    chunk.owned_inserted_[at] = ts;
    chunk.deleted_[at].store(kNotDeleted, std::memory_order_relaxed);
    IndexPkLocked(chunk, at, row);
    if (at + 1 == chunk_rows && options_.indexer != nullptr) filled.push_back(chunks_.back());
  }
  UpdateMemoryLocked();
  rows_.store(row, std::memory_order_release);
  for (auto& chunk : filled) options_.indexer->Enqueue(std::move(chunk), options_.metric);
}

void GrowingSegment::EnsurePkIndexLocked() const {
  if (pk_indexed_.load(std::memory_order_relaxed)) return;
  const size_t rows = rows_.load(std::memory_order_relaxed);
  newest_row_of_pk_.reserve(rows);
  for (size_t row = 0; row < rows; ++row) {
    IndexPkLocked(ChunkOf(static_cast<uint32_t>(row)), row % options_.chunk_rows, row);
  }
  UpdateMemoryLocked();
  pk_indexed_.store(true, std::memory_order_release);
}

void GrowingSegment::IndexPkLocked(Chunk& chunk, size_t at, size_t row) const {
  auto [it, fresh] = newest_row_of_pk_.try_emplace(chunk.pks_[at], static_cast<uint32_t>(row));
  chunk.previous_of_pk_[at] = fresh ? kNoRow : it->second;
  it->second = static_cast<uint32_t>(row);
}

size_t GrowingSegment::Delete(int64_t pk, uint64_t ts) {
  absl::MutexLock lock(&mu_);
  EnsurePkIndexLocked();
  auto it = newest_row_of_pk_.find(pk);
  if (it == newest_row_of_pk_.end()) return 0;
  size_t hidden = 0;
  for (uint32_t row = it->second; row != kNoRow;) {
    Chunk& chunk = ChunkOf(row);
    const size_t at = row % options_.chunk_rows;
    if (chunk.inserted_[at] <= ts && chunk.deleted(at) == kNotDeleted) {
      chunk.deleted_[at].store(ts, std::memory_order_relaxed);
      ++hidden;
    }
    row = chunk.previous_of_pk_[at];
  }
  return hidden;
}

absl::Status GrowingSegment::TakeDeletesOf(const GrowingSegment& original) {
  const SegmentSnapshot from = original.Snapshot();
  absl::MutexLock lock(&mu_);
  const size_t rows = rows_.load(std::memory_order_relaxed);
  if (from.rows != rows || from.chunk_rows != options_.chunk_rows ||
      from.chunks.size() < chunks_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a segment of ", rows, " rows cannot take the deletes of one of ", from.rows, " rows"));
  }
  for (size_t c = 0; c < chunks_.size(); ++c) {
    for (size_t r = 0; r < from.RowsIn(c); ++r) {
      chunks_[c]->deleted_[r].store(from.chunks[c]->deleted(r), std::memory_order_relaxed);
    }
  }
  return absl::OkStatus();
}

bool GrowingSegment::FullChunksIndexed() const {
  if (options_.indexer == nullptr) return true;
  const SegmentSnapshot snap = Snapshot();
  for (size_t c = 0; c < snap.chunks.size(); ++c) {
    if (snap.RowsIn(c) == snap.chunk_rows && snap.chunks[c]->index() == nullptr) return false;
  }
  return true;
}

SegmentSnapshot GrowingSegment::Snapshot() const {
  SegmentSnapshot snap;
  snap.chunk_rows = options_.chunk_rows;
  // The count first: the chunks that hold its rows were added before it was published.
  snap.rows = rows_.load(std::memory_order_acquire);
  absl::ReaderMutexLock lock(&mu_);
  snap.chunks.assign(chunks_.begin(), chunks_.end());
  return snap;
}

void GrowingSegment::EnsurePkIndex() const {
  if (has_pk_index()) return;
  absl::MutexLock lock(&mu_);
  EnsurePkIndexLocked();
}

void GrowingSegment::Get(int64_t pk, uint64_t ts, std::vector<std::vector<float>>* out) const {
  EnsurePkIndex();
  absl::ReaderMutexLock lock(&mu_);
  auto it = newest_row_of_pk_.find(pk);
  if (it == newest_row_of_pk_.end()) return;
  // Newest first along the chain: reverse afterwards to give them in insertion order.
  const size_t first = out->size();
  for (uint32_t row = it->second; row != kNoRow;) {
    const Chunk& chunk = ChunkOf(row);
    const size_t at = row % options_.chunk_rows;
    if (chunk.VisibleAt(at, ts)) {
      out->emplace_back(chunk.vector(at), chunk.vector(at) + options_.dim);
    }
    row = chunk.previous_of_pk_[at];
  }
  std::reverse(out->begin() + static_cast<std::ptrdiff_t>(first), out->end());
}

size_t GrowingSegment::index_bytes() const {
  size_t bytes = 0;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& chunk : chunks_) {
    if (const IvfIndex* index = chunk->index(); index != nullptr) bytes += index->memory_bytes();
  }
  return bytes;
}

void GrowingSegment::UpdateMemoryLocked() const {
  const size_t pk_index = newest_row_of_pk_.capacity() *
                          (sizeof(std::pair<int64_t, uint32_t>) + 1);  // slots + control bytes
  if (options_.account != nullptr) {
    options_.account->Add(static_cast<int64_t>(pk_index) - static_cast<int64_t>(pk_index_bytes_));
  }
  pk_index_bytes_ = pk_index;
  size_t chunks = 0;
  for (const auto& chunk : chunks_) chunks += chunk->memory_bytes();
  memory_bytes_.store(chunks + pk_index, std::memory_order_relaxed);
}

}  // namespace kf::search
