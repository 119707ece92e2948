// LocalScanner: a BackendScanner over a LogState. Reads whole batches through a read-ahead
// buffer, verifies each crc and that offsets are dense, and hands out entries from `start`
// on. Only what the LogState says is readable (durable) is read; at the end it waits on the
// state's condition variable (read-only backends poll the directory instead, since the
// writer is another process).
//
// Thread-safety: not thread-safe (one reader). Ownership: shares the LogState.
// Errors: DEADLINE_EXCEEDED (still usable), DATA_LOSS (corruption, gap in offsets),
// CANCELLED (backend closed), NOT_FOUND (start below the truncation point).
#pragma once

#include <deque>
#include <memory>

#include "wal/backend.h"
#include "wal/backends/local/log_state.h"

namespace kf::wal::local {

class LocalScanner final : public BackendScanner {
 public:
  // Positions the scanner at entry `start` (which may lie beyond the current end).
  static absl::StatusOr<std::unique_ptr<LocalScanner>> Create(std::shared_ptr<LogState> state,
                                                              uint64_t start);

  absl::StatusOr<Entry> Next(absl::Time deadline) override;

 private:
  explicit LocalScanner(std::shared_ptr<LogState> state) : state_(std::move(state)) {}
  absl::Status Seek(uint64_t start);
  void Enter(std::shared_ptr<Segment> seg, uint64_t pos, uint64_t offset);
  // Waits for the state to change or the deadline; DEADLINE_EXCEEDED / CANCELLED.
  absl::Status Wait(uint64_t seen_version, absl::Time deadline);

  std::shared_ptr<LogState> state_;
  std::shared_ptr<Segment> seg_;  // null until the log has a segment
  std::unique_ptr<BatchReader> reader_;
  std::shared_ptr<fs::RandomAccessFile> file_;
  uint64_t pos_ = 0;          // file position of the next batch in seg_
  uint64_t next_offset_ = 0;  // entry offset the next batch must start at
  uint64_t skip_below_ = 0;   // entries below the start are decoded but not returned
  std::deque<Entry> ready_;
};

}  // namespace kf::wal::local
