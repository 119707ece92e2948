// TimestampAllocator hands out hybrid timestamps that are strictly increasing for the life
// of a data directory, across restarts and clock steps backwards.
//
// Monotonicity across restarts comes from a persisted high-water mark: before handing out a
// timestamp at or above the persisted mark, the allocator durably raises the mark by a
// window (default 3 s of physical time). After a restart allocation resumes above the mark, so
// a crash can waste at most one window of timestamps but never repeat one.
//
// Thread-safe. Errors: the persisting write failing (the allocator then refuses to allocate
// beyond the mark: it never hands out a timestamp it could repeat after a crash).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/hybrid_time.h"
#include "storage/fs/file_system.h"

namespace kf {

class TimestampAllocator {
 public:
  struct Options {
    uint64_t window_ms = 3000;
    // Wall clock in milliseconds; replaceable for tests.
    std::function<uint64_t()> now_ms;
    // Where the mark lives; null = the POSIX file system. Borrowed, must outlive the allocator.
    fs::FileSystem* fs = nullptr;
  };

  // Opens (or creates) the high-water-mark file at `path`.
  static absl::StatusOr<std::unique_ptr<TimestampAllocator>> Open(const std::string& path,
                                                                  Options options);

  // Allocates `count` (>= 1) consecutive timestamps and returns the first.
  absl::StatusOr<TimeTick> Allocate(uint32_t count = 1);

  // Ensures every later allocation is greater than `t` (e.g. the last timetick found in a
  // recovered log).
  absl::Status Observe(TimeTick t);

 private:
  TimestampAllocator(std::string path, Options options, uint64_t hwm);
  absl::Status PersistLocked(uint64_t new_hwm) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string path_;
  const Options options_;
  absl::Mutex mu_;
  uint64_t last_ ABSL_GUARDED_BY(mu_);       // last timestamp handed out
  uint64_t persisted_ ABSL_GUARDED_BY(mu_);  // durable high-water mark (exclusive bound)
};

}  // namespace kf
