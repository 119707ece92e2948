// QuorumScanner: a BackendScanner over a quorum log's LogView. Reads each segment's entries from
// any replica of its ensemble (the first that has them), falling back to the uploaded segment
// object; never past the view's readable end, so it returns only durable entries.
//
// Thread-safety: not thread-safe (one reader). Ownership: shares the view; borrows the pool,
// metadata and object store, which the opener keeps alive.
#pragma once

#include <deque>
#include <memory>

#include "wal/backend.h"
#include "wal/backends/quorum/log_view.h"
#include "wal/backends/quorum/quorum_opener.h"

namespace kf::wal::quorum {

class QuorumScanner final : public BackendScanner {
 public:
  // `meta` is used to refresh a view no writer maintains; may be null for a live view.
  QuorumScanner(const QuorumOpenerOptions& options, LogStorePool* pool, QuorumMeta* meta,
                std::string log, std::shared_ptr<LogView> view, uint64_t segment, uint64_t entry);

  absl::StatusOr<Entry> Next(absl::Time deadline) override;

 private:
  // Reads [from, to) of a segment (at least one entry) into buffer_.
  absl::Status Fetch(uint64_t segment, const ViewSegment& seg, uint64_t from, uint64_t to);

  const QuorumOpenerOptions& options_;
  LogStorePool* const pool_;
  QuorumMeta* const meta_;
  const std::string log_;
  std::shared_ptr<LogView> view_;
  uint64_t segment_;
  uint64_t entry_;
  std::deque<Entry> buffer_;
};

}  // namespace kf::wal::quorum
