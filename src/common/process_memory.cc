#include "common/process_memory.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace kf {

namespace {

struct Statm {
  size_t resident = 0;  // bytes
  size_t shared = 0;    // of them, pages of files and shared memory
};

Statm ReadStatm() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return {};
  unsigned long size = 0, resident = 0, shared = 0;  // in pages
  const int got = std::fscanf(f, "%lu %lu %lu", &size, &resident, &shared);
  std::fclose(f);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (got != 3 || page <= 0 || shared > resident) return {};
  return {.resident = resident * static_cast<size_t>(page),
          .shared = shared * static_cast<size_t>(page)};
}

}  // namespace

size_t ReadResidentBytes() { return ReadStatm().resident; }

size_t ReadAnonymousBytes() {
  const Statm m = ReadStatm();
  return m.resident - m.shared;
}

size_t AnonymousMemory::bytes() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t at = read_at_ns_.load(std::memory_order_relaxed);
  // One caller refreshes; the others take the value cached meanwhile.
  if ((at == 0 || now - at >= max_age_ns_) &&
      read_at_ns_.compare_exchange_strong(at, now, std::memory_order_relaxed)) {
    bytes_.store(ReadAnonymousBytes(), std::memory_order_relaxed);
  }
  return bytes_.load(std::memory_order_relaxed);
}

}  // namespace kf
