// ZeroAhead: keeps the bytes just past the active segment's data written with zeros and durable
// (WritableFile::ZeroFill), on a thread of its own, so that small groups overwrite written
// blocks and each group's fdatasync flushes data only: no unwritten-extent conversion and no
// journal commit, whose kworker and jbd2 hops a CPU busy with waking appenders delays. With 64
// appenders (32 KiB groups) that raised the fdatasyncs per second by 30-50% on the dev VM
// (docs/performance.md). Large groups gain little (their fdatasync is mostly data) and would
// pay with the disk bandwidth the zeros take, so the thread zeroes only while groups are small.
//
// Thread-safety: thread-safe; one writer thread calls BeforeWrite and Detach.
// Ownership: shares the files it is given; holds none once detached.
#pragma once

#include <cstdint>
#include <memory>
#include <thread>  // std::jthread

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/fs/file_system.h"

namespace kf::wal::local {

class ZeroAhead {
 public:
  // Groups below this many bytes are small.
  static constexpr uint64_t kSmallGroupBytes = 256 << 10;
  static constexpr uint64_t kChunkBytes = 256 << 10;  // per ZeroFill call
  static constexpr uint64_t kPageBytes = 4096;

  // Zeroes up to `ahead` bytes past the data, never past `limit` (the roll size).
  ZeroAhead(uint64_t ahead, uint64_t limit);
  ~ZeroAhead();  // waits for a chunk in flight

  // The writer is about to write `file` up to `end` with a group of `group_bytes`: waits while
  // a chunk in flight overlaps the write, then lets the thread zero past `end` (small groups).
  void BeforeWrite(const std::shared_ptr<fs::WritableFile>& file, uint64_t end,
                   uint64_t group_bytes);
  // Lets go of the file (waiting for a chunk in flight) before it is truncated or closed.
  void Detach();

  // Bytes zeroed so far, over every file (for tests).
  uint64_t zeroed_bytes() const;

 private:
  void Loop();
  // Waits until no chunk is in flight, so file_ may change.
  void AwaitIdle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  uint64_t NextStart() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const uint64_t ahead_;
  const uint64_t limit_;
  mutable absl::Mutex mu_;
  std::shared_ptr<fs::WritableFile> file_ ABSL_GUARDED_BY(mu_);
  uint64_t end_ ABSL_GUARDED_BY(mu_) = 0;          // the writer's data end in file_
  uint64_t zeroed_ ABSL_GUARDED_BY(mu_) = 0;       // file_ holds durable zeros up to here
  uint64_t group_bytes_ ABSL_GUARDED_BY(mu_) = 0;  // the writer's groups, smoothed
  bool wanted_ ABSL_GUARDED_BY(mu_) = false;       // they are small
  bool failed_ ABSL_GUARDED_BY(mu_) = false;       // ZeroFill failed on file_: leave it alone
  bool busy_ ABSL_GUARDED_BY(mu_) = false;         // a chunk from chunk_start_ is being zeroed
  uint64_t chunk_start_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t zeroed_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::jthread thread_;
};

}  // namespace kf::wal::local
