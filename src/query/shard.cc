#include "query/shard.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/hybrid_time.h"
#include "search/metric.h"
#include "search/segment_search.h"

namespace kf::query {

search::Metric MetricFromProto(kingfisher::v1::MetricType metric) {
  switch (metric) {
    case kingfisher::v1::IP:
      return search::Metric::kIP;
    case kingfisher::v1::COSINE:
      return search::Metric::kCosine;
    default:
      return search::Metric::kL2;  // the schema check admits L2, IP and COSINE only
  }
}

kingfisher::v1::MetricType MetricToProto(search::Metric metric) {
  switch (metric) {
    case search::Metric::kIP:
      return kingfisher::v1::IP;
    case search::Metric::kCosine:
      return kingfisher::v1::COSINE;
    case search::Metric::kL2:
      break;
  }
  return kingfisher::v1::L2;
}

Shard::Shard(std::string vchannel, ShardSchema schema, ShardOptions options, SegmentStart created)
    : vchannel_(std::move(vchannel)), schema_(schema), options_(options) {
  absl::MutexLock lock(&mu_);
  PartitionLocked(kDefaultPartition, created);
}

void Shard::Restore(std::vector<RestoredPartition> partitions, const MessageId& replay_from) {
  absl::MutexLock lock(&mu_);
  partitions_.clear();
  for (RestoredPartition& r : partitions) {
    Partition& p = PartitionLocked(r.name, SegmentStart{.ts = r.growing_id, .from = replay_from});
    for (LoadedSegment& l : r.flushed) {
      l.segment->Seal();
      p.sealed.push_back(Sealed{.id = l.id,
                                .segment = std::move(l.segment),
                                .loaded = true,
                                .object = std::move(l.object),
                                .delete_logs = std::move(l.delete_logs)});
    }
  }
}

void Shard::CreatePartition(std::string_view name, const SegmentStart& created) {
  absl::MutexLock lock(&mu_);
  PartitionLocked(PartitionName(name), created);
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

Shard::Partition& Shard::PartitionLocked(std::string_view name, const SegmentStart& created) {
  Partition& p = partitions_[ToAbsl(name)];
  if (p.growing == nullptr) {
    p.growing = NewSegment();
    p.growing_start = created;
  }
  return p;
}

void Shard::Insert(const kingfisher::v1::InsertBatch& batch, const SegmentStart& start,
                   bool replaying) {
  std::shared_ptr<search::GrowingSegment> segment;
  {
    absl::MutexLock lock(&mu_);
    const std::string_view name = PartitionName(batch.partition());
    if (replaying) {
      // Rows below the growing segment are in a flushed one, or in a partition of this name
      // that was dropped before the checkpoint.
      auto it = partitions_.find(ToAbsl(name));
      if (it == partitions_.end() || start.ts < it->second.growing_start.ts) return;
    }
    Partition& p = PartitionLocked(name, start);
    segment = p.growing;
    p.last_row_ms = PhysicalMs(TimeTick(start.ts));
    if (p.first_row_ms == 0) p.first_row_ms = p.last_row_ms;
  }
  // Outside the lock: readers take it to list segments. Only this writer changes `growing`.
  segment->Insert(std::span(batch.pks().data(), static_cast<size_t>(batch.pks_size())),
                  std::span(batch.vectors().data(), static_cast<size_t>(batch.vectors_size())),
                  start.ts);
}

void Shard::OpenSegment(std::string_view partition, const SegmentStart& start) {
  absl::MutexLock lock(&mu_);
  // The partition may have been dropped after the CreateSegment was asked for: nothing to seal.
  auto it = partitions_.find(ToAbsl(PartitionName(partition)));
  if (it == partitions_.end()) return;
  OpenSegmentLocked(it->second, start);
}

void Shard::SealAll(const SegmentStart& start) {
  absl::MutexLock lock(&mu_);
  for (auto& [name, p] : partitions_) OpenSegmentLocked(p, start);
}

void Shard::OpenSegmentLocked(Partition& p, const SegmentStart& start) {
  if (p.growing->rows() > 0) {
    p.growing->Seal();
    p.sealed.push_back(Sealed{.id = p.growing_start.ts, .segment = std::move(p.growing)});
    p.growing = NewSegment();
  }
  p.growing_start = start;
  p.first_row_ms = p.last_row_ms = 0;
  p.seal_claimed = false;
}

bool Shard::ClaimSeal(std::string_view partition) {
  if (options_.seal_rows == 0 && options_.seal_bytes == 0) return false;
  absl::MutexLock lock(&mu_);
  auto it = partitions_.find(ToAbsl(PartitionName(partition)));
  if (it == partitions_.end()) return false;
  Partition& p = it->second;
  // Bytes of rows, not of allocated chunks: a segment's size does not jump by a chunk.
  const size_t rows = p.growing->rows();
  const bool full = (options_.seal_rows != 0 && rows >= options_.seal_rows) ||
                    (options_.seal_bytes != 0 &&
                     rows * search::Chunk::BytesPerRow(schema_.dim) >= options_.seal_bytes);
  if (p.seal_claimed || !full) return false;
  p.seal_claimed = true;
  return true;
}

std::vector<std::string> Shard::ClaimAgedSeals(uint64_t now_ms) {
  auto ms = [](absl::Duration d) { return static_cast<uint64_t>(absl::ToInt64Milliseconds(d)); };
  const uint64_t lifetime = ms(options_.seal_lifetime);
  const uint64_t idle = ms(options_.seal_idle);
  std::vector<std::string> out;
  if (lifetime == 0 && idle == 0) return out;
  absl::MutexLock lock(&mu_);
  for (auto& [name, p] : partitions_) {
    if (p.seal_claimed || p.first_row_ms == 0) continue;
    if ((lifetime != 0 && now_ms >= p.first_row_ms + lifetime) ||
        (idle != 0 && now_ms >= p.last_row_ms + idle)) {
      p.seal_claimed = true;
      out.push_back(name);
    }
  }
  return out;
}

std::optional<std::pair<std::string, size_t>> Shard::LargestGrowing(size_t min_rows) const {
  std::optional<std::pair<std::string, size_t>> best;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [name, p] : partitions_) {
    if (p.seal_claimed || p.growing->rows() < std::max<size_t>(1, min_rows)) continue;
    const size_t bytes = p.growing->memory_bytes() + p.growing->index_bytes();
    if (!best.has_value() || bytes > best->second) best.emplace(name, bytes);
  }
  return best;
}

bool Shard::ClaimSealOf(std::string_view partition) {
  absl::MutexLock lock(&mu_);
  auto it = partitions_.find(ToAbsl(PartitionName(partition)));
  if (it == partitions_.end() || it->second.seal_claimed) return false;
  it->second.seal_claimed = true;
  return true;
}

void Shard::ReleaseSealClaim(std::string_view partition) {
  absl::MutexLock lock(&mu_);
  auto it = partitions_.find(ToAbsl(PartitionName(partition)));
  if (it != partitions_.end()) it->second.seal_claimed = false;
}

void Shard::Delete(const kingfisher::v1::DeletePks& pks, uint64_t ts, bool replaying) {
  // A loaded segment's pk index is built by its first lookup: here, outside the shard's lock,
  // so that searches of the shard do not wait for it.
  std::vector<std::shared_ptr<search::GrowingSegment>> unindexed;
  {
    absl::ReaderMutexLock lock(&mu_);
    for (const auto& [name, p] : partitions_) {
      for (const Sealed& sealed : p.sealed) {
        if (!(replaying && sealed.loaded) && !sealed.segment->has_pk_index()) {
          unindexed.push_back(sealed.segment);
        }
      }
    }
  }
  for (const auto& segment : unindexed) segment->EnsurePkIndex();
  // Under the lock (the only writer is this thread; readers list segments under it only
  // briefly): a sealed segment records what it hid, for its delete log.
  absl::MutexLock lock(&mu_);
  for (auto& [name, p] : partitions_) {
    for (Sealed& sealed : p.sealed) {
      if (replaying && sealed.loaded) continue;
      for (int64_t pk : pks.pks()) {
        if (sealed.segment->Delete(pk, ts) > 0) sealed.unlogged.push_back({.pk = pk, .ts = ts});
      }
    }
    for (int64_t pk : pks.pks()) p.growing->Delete(pk, ts);
  }
}

ShardCheckpointPlan Shard::PlanCheckpoint() const {
  ShardCheckpointPlan plan;
  kingfisher::v1::ShardCheckpoint& c = plan.checkpoint;
  c.set_vchannel(vchannel_);
  c.set_collection_id(schema_.collection_id);
  c.set_dim(schema_.dim);
  c.set_metric(MetricToProto(schema_.metric));
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [name, p] : partitions_) {
    const int pi = c.partitions_size();
    kingfisher::v1::PartitionCheckpoint* pc = c.add_partitions();
    pc->set_name(name);
    pc->set_growing_id(p.growing_start.ts);
    for (const Sealed& sealed : p.sealed) {
      const int fi = pc->flushed_size();
      kingfisher::v1::FlushedSegment* f = pc->add_flushed();
      f->set_id(sealed.id);
      f->set_rows(sealed.segment->rows());
      f->mutable_delete_logs()->Add(sealed.delete_logs.begin(), sealed.delete_logs.end());
      if (sealed.object.empty()) {
        plan.segments.push_back({.partition = pi,
                                 .flushed = fi,
                                 .segment = sealed.segment,
                                 .deletes_taken = sealed.unlogged.size()});
      } else {
        f->set_object(sealed.object);
        if (!sealed.unlogged.empty()) {
          plan.delete_logs.push_back({.partition = pi, .flushed = fi, .records = sealed.unlogged});
        }
      }
    }
    if (p.growing->rows() > 0 &&
        (!plan.replay_from.has_value() || p.growing_start.from < *plan.replay_from)) {
      plan.replay_from = p.growing_start.from;
    }
  }
  return plan;
}

void Shard::CheckpointCommitted(const ShardCheckpointPlan& plan, const MessageId& replay_from) {
  absl::MutexLock lock(&mu_);
  for (auto& [name, p] : partitions_) {
    if (p.growing_start.from < replay_from) p.growing_start.from = replay_from;
  }
  // The sealed segment the plan's (partition, flushed) names, if its partition still exists.
  auto sealed_of = [&](int pi, int fi) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) -> Sealed* {
    const kingfisher::v1::PartitionCheckpoint& pc = plan.checkpoint.partitions(pi);
    auto it = partitions_.find(pc.name());
    if (it == partitions_.end()) return nullptr;
    for (Sealed& s : it->second.sealed) {
      if (s.id == pc.flushed(fi).id()) return &s;
    }
    return nullptr;
  };
  // Only this thread and the applier touch `unlogged`, and the applier only appends to it: the
  // records a plan took are still its first ones.
  for (const ShardCheckpointPlan::Segment& seg : plan.segments) {
    Sealed* s = sealed_of(seg.partition, seg.flushed);
    if (s == nullptr) continue;
    s->object = plan.checkpoint.partitions(seg.partition).flushed(seg.flushed).object();
    s->unlogged.erase(s->unlogged.begin(), s->unlogged.begin() + seg.deletes_taken);
    // Deletes take mu_ (held): none lands on the old segment between the copy and the swap.
    if (seg.reloaded != nullptr && s->segment == seg.segment &&
        seg.reloaded->TakeDeletesOf(*s->segment).ok()) {
      s->segment = seg.reloaded;
    }
  }
  for (const ShardCheckpointPlan::DeleteLog& log : plan.delete_logs) {
    Sealed* s = sealed_of(log.partition, log.flushed);
    if (s == nullptr) continue;
    const auto& logs = plan.checkpoint.partitions(log.partition).flushed(log.flushed).delete_logs();
    s->delete_logs.assign(logs.begin(), logs.end());
    s->unlogged.erase(s->unlogged.begin(), s->unlogged.begin() + log.records.size());
  }
}

Shard::Segments Shard::AllSegments() const {
  Segments segments;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [name, p] : partitions_) {
    for (const Sealed& sealed : p.sealed) segments.push_back(sealed.segment);
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
  Segments segments;
  for (const Sealed& sealed : it->second.sealed) segments.push_back(sealed.segment);
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

size_t Shard::flushed_segments() const {
  size_t n = 0;
  absl::ReaderMutexLock lock(&mu_);
  for (const auto& [name, p] : partitions_) {
    for (const Sealed& s : p.sealed) n += s.object.empty() ? 0 : 1;
  }
  return n;
}

std::optional<uint64_t> Shard::growing_segment_id(std::string_view partition) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = partitions_.find(ToAbsl(PartitionName(partition)));
  if (it == partitions_.end()) return std::nullopt;
  return it->second.growing_start.ts;
}

size_t Shard::index_bytes() const {
  size_t n = 0;
  for (const auto& segment : AllSegments()) n += segment->index_bytes();
  return n;
}

}  // namespace kf::query
