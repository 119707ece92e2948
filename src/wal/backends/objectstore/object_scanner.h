// ObjectScanner: a BackendScanner over a LogView. Fetches whole blocks (from the view's cache or
// the object store), verifies them, and hands out their entries from the start position on.
// Only blocks the view says are durable are read; at the end of the log it waits on the view's
// condition variable (a writer's view) or polls the stores (a read-only view).
//
// Thread-safety: not thread-safe (one reader). Ownership: shares the LogView.
// Errors: DEADLINE_EXCEEDED (still usable), DATA_LOSS (a corrupt or missing durable block),
// CANCELLED (backend closed), OUT_OF_RANGE (the position was truncated).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "wal/backend.h"
#include "wal/backends/objectstore/log_view.h"

namespace kf::wal::objectstore {

class ObjectScanner final : public BackendScanner {
 public:
  // Reads from entry `entry` of segment `segment` on (either may lie beyond the current end;
  // a segment that no longer exists continues at the next one).
  ObjectScanner(std::shared_ptr<LogView> view, uint64_t segment, uint64_t entry)
      : view_(std::move(view)), segment_(segment), block_(BlockOf(entry)), skip_below_(entry) {}

  absl::StatusOr<Entry> Next(absl::Time deadline) override;

 private:
  // Fills ready_ from the next block, moves to the next segment, or waits. OK when progress
  // was made (ready_ may still be empty, e.g. after a segment change).
  absl::Status Advance(absl::Time deadline);
  absl::Status ReadBlock(uint64_t block, absl::Time deadline);
  absl::Status ReadMerged(const MergedRun& run, absl::Time deadline);
  // Queues the entries of the verified block `bytes` at `block` of segment_.
  absl::Status Decode(std::string_view bytes, uint64_t block);
  // After a durable object came back NOT_FOUND: OK when it was compacted meanwhile (the caller
  // reads again), OUT_OF_RANGE when truncated, else DATA_LOSS.
  absl::Status Missing(uint64_t block, const std::string& key, absl::Time deadline);
  // Whether what this scanner still wants of segment_ was truncated. If it wants only what
  // follows the newest truncated segment's last entry, moves on to the next segment instead
  // (false).
  bool LostToTruncation() ABSL_EXCLUSIVE_LOCKS_REQUIRED(view_->mu);
  // OUT_OF_RANGE: segment_ was truncated; names the earliest readable id.
  absl::Status TruncatedError() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(view_->mu);

  std::shared_ptr<LogView> view_;
  uint64_t segment_;
  uint64_t block_;       // the next block to read in segment_
  uint64_t skip_below_;  // entries of segment_ below this are not returned
  std::deque<Entry> ready_;
};

}  // namespace kf::wal::objectstore
