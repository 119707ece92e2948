#include "storage/tso/timestamp_allocator.h"

#include <chrono>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/status_macros.h"
#include "storage/fs/file_system.h"

namespace kf {
namespace {
uint64_t SystemNowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}
}  // namespace

absl::StatusOr<std::unique_ptr<TimestampAllocator>> TimestampAllocator::Open(
    const std::string& path, Options options) {
  if (!options.now_ms) options.now_ms = SystemNowMs;
  if (options.fs == nullptr) options.fs = fs::DefaultFileSystem();
  uint64_t hwm = 0;
  auto contents = fs::ReadFileToString(options.fs, path);
  if (contents.ok()) {
    absl::string_view text = absl::StripTrailingAsciiWhitespace(*contents);
    if (!absl::SimpleAtoi(text, &hwm)) {
      return absl::DataLossError(
          absl::StrCat("timestamp high-water mark ", path, " is corrupt: '", text, "'"));
    }
  } else if (!absl::IsNotFound(contents.status())) {
    return contents.status();
  }
  return std::unique_ptr<TimestampAllocator>(new TimestampAllocator(path, std::move(options), hwm));
}

TimestampAllocator::TimestampAllocator(std::string path, Options options, uint64_t hwm)
    : path_(std::move(path)), options_(std::move(options)), last_(hwm), persisted_(hwm) {}

absl::Status TimestampAllocator::PersistLocked(uint64_t new_hwm) {
  RETURN_IF_ERROR(fs::WriteFileAtomically(options_.fs, path_, absl::StrCat(new_hwm, "\n")));
  persisted_.store(new_hwm, std::memory_order_release);
  return absl::OkStatus();
}

absl::StatusOr<TimeTick> TimestampAllocator::Allocate(uint32_t count) {
  if (count == 0) return absl::InvalidArgumentError("allocate count must be >= 1");
  const uint64_t now = ComposeTimeTick(options_.now_ms(), 0).value();
  // Fast path: the whole range lies below a durable mark, so claiming it is one CAS.
  uint64_t last = last_.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t first = std::max(now, last + 1);
    const uint64_t end = first + count;  // exclusive
    if (end > persisted_.load(std::memory_order_acquire)) break;
    if (last_.compare_exchange_weak(last, end - 1, std::memory_order_relaxed)) {
      return TimeTick(first);
    }
  }
  // Slow path: the mark must be raised (durably) first. Fast-path allocators may still claim
  // ranges below the old mark meanwhile, hence the CAS here too.
  absl::MutexLock lock(&mu_);
  last = last_.load(std::memory_order_relaxed);
  for (;;) {
    const uint64_t first = std::max(now, last + 1);
    const uint64_t end = first + count;
    if (end > persisted_.load(std::memory_order_relaxed)) {
      uint64_t mark = ComposeTimeTick(PhysicalMs(TimeTick(end)) + options_.window_ms, 0).value();
      RETURN_IF_ERROR(PersistLocked(mark));
    }
    if (last_.compare_exchange_weak(last, end - 1, std::memory_order_relaxed)) {
      return TimeTick(first);
    }
  }
}

uint64_t TimestampAllocator::RaiseLast(uint64_t floor) {
  uint64_t last = last_.load(std::memory_order_relaxed);
  while (last < floor && !last_.compare_exchange_weak(last, floor, std::memory_order_relaxed)) {
  }
  return last;
}

absl::Status TimestampAllocator::Observe(TimeTick t) {
  absl::MutexLock lock(&mu_);
  if (RaiseLast(t.value()) >= t.value()) return absl::OkStatus();
  if (t.value() >= persisted_.load(std::memory_order_relaxed)) {
    return PersistLocked(
        ComposeTimeTick(PhysicalMs(TimeTick(t.value() + 1)) + options_.window_ms, 0).value());
  }
  return absl::OkStatus();
}

}  // namespace kf
