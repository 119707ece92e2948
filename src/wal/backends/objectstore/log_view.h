// LogView: what the readers of one objectstore log see — its segments with how many blocks of
// each are durable, and the blocks written recently (a cache, so tailing readers do not fetch
// what the writer still holds). The writer publishes into it after each acknowledged group; a
// read-only backend refreshes it from the metadata and object stores (Refresh).
//
// Thread-safety: thread-safe. Ownership: shared by the backend and its scanners (a scanner may
// outlive Close(); it then returns CANCELLED). The stores are borrowed.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "kingfisher/v1/wal_meta.pb.h"
#include "storage/meta/meta_store.h"
#include "storage/object/object_store.h"
#include "wal/backends/objectstore/layout.h"

namespace kf::wal::objectstore {

// Blocks [first, end) of a sealed segment, stored as one compacted object.
struct MergedRun {
  uint64_t first = 0;
  uint64_t end = 0;
};

struct SegmentView {
  uint64_t id = 0;
  bool sealed = false;     // no block will be added
  uint64_t blocks = 0;     // durable blocks: [0, blocks)
  uint64_t end_entry = 0;  // the entry id after the last durable entry
  uint64_t bytes = 0;      // of the durable blocks
  // Sizes of the durable blocks when known (recovered or written by this process), else
  // empty: TailStart lists the segment.
  std::vector<uint64_t> block_bytes;
  std::vector<MergedRun> merged;  // in block order

  // The compacted run holding `block`, or null.
  const MergedRun* MergedAt(uint64_t block) const;
};

// The view of a segment as the metadata records it.
SegmentView ViewOf(const kingfisher::v1::ObjectLogSegment& segment);

class LogView {
 public:
  LogView(object::ObjectStore* store, meta::MetaStore* meta, Layout layout, bool read_only,
          uint64_t cache_bytes, absl::Duration poll_interval, absl::Duration request_timeout);

  object::ObjectStore* store() const { return store_; }
  const Layout& layout() const { return layout_; }
  bool read_only() const { return read_only_; }
  absl::Duration poll_interval() const { return poll_interval_; }
  // Store requests get this long even when the caller's deadline is nearer: the caller's
  // deadline bounds waiting for new entries, not reading durable ones.
  absl::Time RequestDeadline(absl::Time deadline) const {
    return std::max(deadline, absl::Now() + request_timeout_);
  }

  absl::Mutex mu;
  absl::CondVar cv;  // signalled when `version` changes or on close
  std::vector<SegmentView> segments ABSL_GUARDED_BY(mu);
  uint64_t truncated_segments ABSL_GUARDED_BY(mu) = 0;  // ids below this were truncated
  // Where the newest truncated segment ended (ObjectLogMeta::truncated_end); nullopt: unknown.
  std::optional<kingfisher::v1::TruncatedEnd> truncated_end ABSL_GUARDED_BY(mu);
  uint64_t version ABSL_GUARDED_BY(mu) = 0;
  bool closed ABSL_GUARDED_BY(mu) = false;

  // Index of the first segment with id >= `id` (segments.size() if none).
  size_t FindSegment(uint64_t id) const ABSL_SHARED_LOCKS_REQUIRED(mu);
  // The truncation point as `meta` records it (truncated_segments, truncated_end).
  void TakeTruncation(const kingfisher::v1::ObjectLogMeta& meta) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    truncated_segments = meta.truncated_segments();
    truncated_end = meta.has_truncated_end() ? std::optional(meta.truncated_end()) : std::nullopt;
  }
  void Changed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    ++version;
    cv.SignalAll();
  }

  // The bytes of a durable block: from the cache, else fetched (retrying UNAVAILABLE until
  // `deadline`). NOT_FOUND when missing: truncated or compacted meanwhile, or lost.
  absl::StatusOr<std::shared_ptr<const std::string>> FetchBlock(uint64_t segment, uint64_t block,
                                                                absl::Time deadline);
  // A compacted object, fetched (retrying UNAVAILABLE until `deadline`); NOT_FOUND when missing.
  absl::StatusOr<std::string> FetchMerged(uint64_t segment, const MergedRun& run,
                                          absl::Time deadline);
  void CacheBlock(uint64_t segment, uint64_t block, std::shared_ptr<const std::string> bytes);

  // Read-only views: re-reads the metadata and probes the open segments for new blocks; bumps
  // `version` when something changed.
  absl::Status Refresh(absl::Time deadline);

 private:
  object::ObjectStore* const store_;
  meta::MetaStore* const meta_;
  const Layout layout_;
  const bool read_only_;
  const uint64_t cache_limit_;
  const absl::Duration poll_interval_;
  const absl::Duration request_timeout_;

  absl::Mutex cache_mu_;
  std::map<std::pair<uint64_t, uint64_t>, std::shared_ptr<const std::string>> cache_
      ABSL_GUARDED_BY(cache_mu_);
  std::deque<std::pair<uint64_t, uint64_t>> cache_order_ ABSL_GUARDED_BY(cache_mu_);
  uint64_t cache_used_ ABSL_GUARDED_BY(cache_mu_) = 0;
};

}  // namespace kf::wal::objectstore
