#include "wal/backends/objectstore/log_view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "wal/backends/objectstore/block_format.h"
#include "wal/backends/objectstore/log_meta.h"

namespace kf::wal::objectstore {

LogView::LogView(object::ObjectStore* store, meta::MetaStore* meta, Layout layout, bool read_only,
                 uint64_t cache_bytes, absl::Duration poll_interval, absl::Duration request_timeout)
    : store_(store),
      meta_(meta),
      layout_(std::move(layout)),
      read_only_(read_only),
      cache_limit_(cache_bytes),
      poll_interval_(poll_interval),
      request_timeout_(request_timeout) {}

const MergedRun* SegmentView::MergedAt(uint64_t block) const {
  for (const MergedRun& r : merged) {
    if (block >= r.first && block < r.end) return &r;
  }
  return nullptr;
}

SegmentView ViewOf(const kingfisher::v1::ObjectLogSegment& s) {
  SegmentView v{.id = s.id(),
                .sealed = s.sealed(),
                .blocks = s.blocks(),
                .end_entry = s.end_entry(),
                .bytes = s.bytes()};
  for (const auto& m : s.merged()) v.merged.push_back({m.first_block(), m.end_block()});
  return v;
}

size_t LogView::FindSegment(uint64_t id) const {
  auto it = std::lower_bound(segments.begin(), segments.end(), id,
                             [](const SegmentView& s, uint64_t v) { return s.id < v; });
  return static_cast<size_t>(it - segments.begin());
}

absl::StatusOr<std::shared_ptr<const std::string>> LogView::FetchBlock(uint64_t segment,
                                                                       uint64_t block,
                                                                       absl::Time deadline) {
  {
    absl::MutexLock l(&cache_mu_);
    if (auto it = cache_.find({segment, block}); it != cache_.end()) return it->second;
  }
  const std::string key = layout_.BlockKey(segment, block);
  auto got = RetryUnavailable(deadline,
                              [&] { return store_->Get(key, object::ByteRange::All(), deadline); });
  if (!got.ok()) return got.status();
  return std::make_shared<const std::string>(*std::move(got));
}

absl::StatusOr<std::string> LogView::FetchMerged(uint64_t segment, const MergedRun& run,
                                                 absl::Time deadline) {
  const std::string key = layout_.MergedKey(segment, run.first, run.end);
  return RetryUnavailable(deadline,
                          [&] { return store_->Get(key, object::ByteRange::All(), deadline); });
}

void LogView::CacheBlock(uint64_t segment, uint64_t block,
                         std::shared_ptr<const std::string> bytes) {
  if (bytes->size() > cache_limit_) return;
  absl::MutexLock l(&cache_mu_);
  cache_used_ += bytes->size();
  cache_[{segment, block}] = std::move(bytes);
  cache_order_.emplace_back(segment, block);
  while (cache_used_ > cache_limit_) {
    auto it = cache_.find(cache_order_.front());
    cache_used_ -= it->second->size();
    cache_.erase(it);
    cache_order_.pop_front();
  }
}

absl::Status LogView::Refresh(absl::Time deadline) {
  auto loaded =
      RetryUnavailable(deadline, [&] { return LoadMeta(meta_, layout_.meta_key(), deadline); });
  if (!loaded.ok()) return loaded.status();
  std::vector<SegmentView> next;
  {
    absl::MutexLock l(&mu);
    for (const auto& s : loaded->meta.segments()) {
      SegmentView v = ViewOf(s);
      if (!v.sealed) {  // keep what earlier probes found
        if (size_t i = FindSegment(v.id); i < segments.size() && segments[i].id == v.id) {
          v = segments[i];
        }
      }
      next.push_back(std::move(v));
    }
  }
  // A writer may still add blocks to the segments it has not sealed: probe for the next ones.
  // A fence block ends a segment (its writer was fenced; the metadata seals it soon).
  for (SegmentView& v : next) {
    while (!v.sealed) {
      auto head = store_->Head(layout_.BlockKey(v.id, v.blocks), deadline);
      if (absl::IsNotFound(head.status())) break;
      if (!head.ok()) return head.status();
      if (head->size <= kFenceBlockSize) {
        v.sealed = true;
        break;
      }
      v.bytes += head->size;
      ++v.blocks;
    }
  }
  absl::MutexLock l(&mu);
  auto same = [](const SegmentView& a, const SegmentView& b) {
    return a.id == b.id && a.sealed == b.sealed && a.blocks == b.blocks &&
           a.merged.size() == b.merged.size();
  };
  if (next.size() != segments.size() ||
      !std::equal(next.begin(), next.end(), segments.begin(), same) ||
      truncated_segments != loaded->meta.truncated_segments()) {
    segments = std::move(next);
    TakeTruncation(loaded->meta);
    Changed();
  }
  return absl::OkStatus();
}

}  // namespace kf::wal::objectstore
