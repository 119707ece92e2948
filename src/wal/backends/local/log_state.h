// LogState: what the readers of one open pchannel log see — the ordered segments, how many
// bytes of each are readable (durable and valid), a sparse index per segment, and a condition
// variable signalled whenever more becomes readable. The writer (LocalBackend) publishes into
// it after each fdatasync; a read-only backend refreshes it from disk (RefreshFromDisk).
//
// Thread-safety: all mutable fields are guarded by `mu`. Ownership: shared by the backend and
// its scanners (a scanner may outlive Close(), it then returns CANCELLED).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/strong_id.h"
#include "storage/fs/file_system.h"
#include "wal/backends/local/segment_reader.h"

namespace kf::wal::local {

struct Segment {
  Segment(std::string name_in, std::string path_in, uint64_t base_in, Term term_in)
      : name(std::move(name_in)),
        path(std::move(path_in)),
        base(base_in),
        term(term_in),
        indexed_offset(base_in) {}

  const std::string name;
  const std::string path;
  const uint64_t base;  // offset of its first entry
  const Term term;      // the term that wrote it

  // The fields below are guarded by the owning LogState::mu.
  uint64_t limit = 0;  // readable bytes
  // Readers of a segment another process is still writing: an incomplete or invalid batch at
  // `limit` means "not there yet" rather than DATA_LOSS.
  bool tolerate_tail = false;
  std::vector<IndexPoint> index;  // complete for [0, indexed_pos)
  uint64_t indexed_pos = 0;
  uint64_t indexed_offset = 0;                 // entry offset at indexed_pos
  std::shared_ptr<fs::RandomAccessFile> file;  // opened lazily for reading
};

class LogState {
 public:
  LogState(fs::FileSystem* fs, std::string dir, bool read_only)
      : fs_(fs), dir_(std::move(dir)), read_only_(read_only) {}

  fs::FileSystem* fs() const { return fs_; }
  const std::string& dir() const { return dir_; }
  bool read_only() const { return read_only_; }

  absl::Mutex mu;
  absl::CondVar cv;  // signalled (SignalAll) when `version` changes or on close
  std::vector<std::shared_ptr<Segment>> segments ABSL_GUARDED_BY(mu);
  uint64_t version ABSL_GUARDED_BY(mu) = 0;
  bool closed ABSL_GUARDED_BY(mu) = false;

  // The segment after `seg` in log order, or null.
  std::shared_ptr<Segment> NextSegment(const Segment* seg) const ABSL_SHARED_LOCKS_REQUIRED(mu);

  // Opens seg->file if needed. Takes mu briefly.
  absl::StatusOr<std::shared_ptr<fs::RandomAccessFile>> FileOf(Segment* seg);

  // Extends seg's index by hopping batch headers up to its limit. Returns the entry offset
  // where the readable part ends (as far as the hops got). Takes mu briefly; I/O runs unlocked.
  absl::StatusOr<uint64_t> EnsureIndex(Segment* seg);

  // Read-only backends: re-reads the directory, fence and seal records and updates
  // `segments`; bumps `version` and signals when something changed.
  absl::Status RefreshFromDisk();

 private:
  fs::FileSystem* const fs_;
  const std::string dir_;
  const bool read_only_;
};

}  // namespace kf::wal::local
