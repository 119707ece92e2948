#include "query/shard.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "search/metric.h"
#include "search/segment_search.h"

namespace kf::query {
Shard::Shard(std::string vchannel, ShardSchema schema, ShardOptions options)
    : vchannel_(std::move(vchannel)), schema_(schema), options_(options) {
  CreatePartition(kDefaultPartition);
}

void Shard::CreatePartition(std::string_view name) {
  absl::MutexLock lock(&mu_);
  PartitionLocked(PartitionName(name));
}

void Shard::DropPartition(std::string_view name) {
  absl::MutexLock lock(&mu_);
  partitions_.erase(ToAbsl(PartitionName(name)));
}

std::shared_ptr<search::GrowingSegment> Shard::NewSegment() const {
  return std::make_shared<search::GrowingSegment>(
      search::SegmentOptions{.dim = schema_.dim,
                             .metric = schema_.metric,
                             .chunk_rows = options_.chunk_rows,
                             .indexer = options_.indexer,
                             .account = options_.account});
}

Shard::Partition& Shard::PartitionLocked(std::string_view name) {
  Partition& p = partitions_[ToAbsl(name)];
  if (p.growing == nullptr) p.growing = NewSegment();
  return p;
}

void Shard::Insert(const kingfisher::v1::InsertBatch& batch, uint64_t ts) {
  std::shared_ptr<search::GrowingSegment> segment;
  {
    absl::MutexLock lock(&mu_);
    segment = PartitionLocked(PartitionName(batch.partition())).growing;
  }
  // Outside the lock: readers take it to list segments. Only this writer changes `growing`.
  segment->Insert(std::span(batch.pks().data(), static_cast<size_t>(batch.pks_size())),
                  std::span(batch.vectors().data(), static_cast<size_t>(batch.vectors_size())), ts);
}

void Shard::OpenSegment(std::string_view partition, uint64_t id) {
  absl::MutexLock lock(&mu_);
  // The partition may have been dropped after the CreateSegment was asked for: nothing to seal.
  auto it = partitions_.find(ToAbsl(PartitionName(partition)));
  if (it == partitions_.end()) return;
  Partition& p = it->second;
  if (p.growing->rows() > 0) {
    p.growing->Seal();
    p.sealed.push_back(std::move(p.growing));
    p.growing = NewSegment();
  }
  p.growing_id = id;
  p.seal_claimed = false;
}

bool Shard::ClaimSeal(std::string_view partition) {
  if (options_.seal_rows == 0) return false;
  absl::MutexLock lock(&mu_);
  auto it = partitions_.find(ToAbsl(PartitionName(partition)));
  if (it == partitions_.end()) return false;
  Partition& p = it->second;
  if (p.seal_claimed || p.growing->rows() < options_.seal_rows) return false;
  p.seal_claimed = true;
  return true;
}

void Shard::ReleaseSealClaim(std::string_view partition) {
  absl::MutexLock lock(&mu_);
  auto it = partitions_.find(ToAbsl(PartitionName(partition)));
  if (it != partitions_.end()) it->second.seal_claimed = false;
}

void Shard::Delete(const kingfisher::v1::DeletePks& pks, uint64_t ts) {
  for (const auto& segment : AllSegments()) {
    for (int64_t pk : pks.pks()) segment->Delete(pk, ts);
  }
}

Shard::Segments Shard::AllSegments() const {
  Segments segments;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [name, p] : partitions_) {
    segments.insert(segments.end(), p.sealed.begin(), p.sealed.end());
    segments.push_back(p.growing);
  }
  return segments;
}

absl::StatusOr<Shard::Segments> Shard::SegmentsFor(
    const std::optional<std::string>& partition) const {
  if (!partition.has_value()) return AllSegments();
  absl::ReaderMutexLock lock(&mu_);
  auto it = partitions_.find(ToAbsl(PartitionName(*partition)));
  if (it == partitions_.end()) {
    return StreamingError(StreamingCode::kCollectionNotFound,
                          absl::StrCat("partition ", *partition, " of collection ",
                                       schema_.collection_id, " does not exist"));
  }
  Segments segments = it->second.sealed;
  segments.push_back(it->second.growing);
  return segments;
}

absl::StatusOr<std::vector<search::Hit>> Shard::Search(
    const float* query, size_t k, size_t nprobe, const search::SearchFilter& filter,
    const std::optional<std::string>& partition) const {
  absl::StatusOr<Segments> segments = SegmentsFor(partition);
  if (!segments.ok()) return segments.status();
  std::vector<float> stored(query, query + schema_.dim);
  if (schema_.metric == search::Metric::kCosine) search::Normalize(stored.data(), schema_.dim);
  search::TopK top(k);
  for (const auto& segment : *segments) {
    search::SearchSegment(segment->Snapshot(), schema_.metric, schema_.dim, stored.data(), filter,
                          nprobe, &top);
  }
  return top.Take();
}

std::vector<std::vector<float>> Shard::Get(int64_t pk, uint64_t ts) const {
  std::vector<std::vector<float>> out;
  for (const auto& segment : AllSegments()) segment->Get(pk, ts, &out);
  return out;
}

size_t Shard::rows() const {
  size_t n = 0;
  for (const auto& segment : AllSegments()) n += segment->rows();
  return n;
}

size_t Shard::memory_bytes() const {
  size_t n = 0;
  for (const auto& segment : AllSegments()) n += segment->memory_bytes();
  return n;
}

size_t Shard::sealed_segments() const {
  size_t n = 0;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [name, p] : partitions_) n += p.sealed.size();
  return n;
}

std::optional<uint64_t> Shard::growing_segment_id(std::string_view partition) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = partitions_.find(ToAbsl(PartitionName(partition)));
  if (it == partitions_.end()) return std::nullopt;
  return it->second.growing_id;
}

size_t Shard::index_bytes() const {
  size_t n = 0;
  for (const auto& segment : AllSegments()) n += segment->index_bytes();
  return n;
}

}  // namespace kf::query
