// TimestampAllocator hands out hybrid timestamps that are strictly increasing for the life
// of a data directory, across restarts and clock steps backwards.
//
// Monotonicity across restarts comes from a persisted high-water mark: before handing out a
// timestamp at or above the persisted mark, the allocator durably raises the mark by a
// window (default 3 s of physical time). After a restart allocation resumes above the mark, so
// a crash can waste at most one window of timestamps but never repeat one.
//
// Thread-safe. Allocations below the persisted mark take no lock (one compare-and-swap); the
// mutex serialises only raising the mark. Errors: the persisting write failing (the allocator
// then refuses to allocate beyond the mark: it never hands out a timestamp it could repeat
// after a crash).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/hybrid_time.h"
#include "storage/fs/file_system.h"
#include "storage/tso/timestamp_source.h"

namespace kf {

class TimestampAllocator final : public TimestampSource {
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
  absl::StatusOr<TimeTick> Allocate(uint32_t count = 1) override;

  // Ensures every later allocation is greater than `t` (e.g. the last timetick found in a
  // recovered log).
  absl::Status Observe(TimeTick t) override;

 private:
  TimestampAllocator(std::string path, Options options, uint64_t hwm);
  absl::Status PersistLocked(uint64_t new_hwm) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Raises last_ to at least `floor`; returns the previous value.
  uint64_t RaiseLast(uint64_t floor);

  const std::string path_;
  const Options options_;
  absl::Mutex mu_;  // serialises raising persisted_ (and its write)
  // Last timestamp handed out. Only grows; advanced by compare-and-swap.
  std::atomic<uint64_t> last_;
  // Durable high-water mark (exclusive bound); stored only after the mark is durable, under
  // mu_, and only grows, so a reader that sees a value may hand out anything below it.
  std::atomic<uint64_t> persisted_;
};

}  // namespace kf
