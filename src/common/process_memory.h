// The memory of this process: resident (VmRSS, what `top` shows) and anonymous — resident but
// for the pages of mapped files (the sealed segment objects a node searches in place, the
// binary), which the kernel drops and reads again under pressure instead of running out. The
// anonymous part is what admits Inserts under `memory_limit` (docs/configuration.md).
//
// Thread-safety: AnonymousMemory is thread-safe. Errors: a /proc that cannot be read gives 0
// (no limit can then refuse anything; the server logs it once at startup).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"

namespace kf {

// Reads /proc/self/statm now: resident pages times the page size; 0 if unreadable.
size_t ReadResidentBytes();
// The same, less the resident pages of files and shared memory (statm's `shared`): VmRSS's
// RssAnon. 0 if unreadable.
size_t ReadAnonymousBytes();

// ReadAnonymousBytes at most once per `max_age`, the value cached in between: an admission
// check per Insert costs two relaxed loads.
class AnonymousMemory {
 public:
  explicit AnonymousMemory(absl::Duration max_age = absl::Milliseconds(10))
      : max_age_ns_(absl::ToInt64Nanoseconds(max_age)) {}
  size_t bytes();

 private:
  const int64_t max_age_ns_;
  std::atomic<int64_t> read_at_ns_{0};
  std::atomic<size_t> bytes_{0};
};

}  // namespace kf
