#include "common/process_memory.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

namespace kf {

size_t ReadResidentBytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;  // in pages
  const int got = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  const long page = sysconf(_SC_PAGE_SIZE);
  return got == 2 && page > 0 ? resident * static_cast<size_t>(page) : 0;
}

size_t ResidentMemory::bytes() {
  const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::steady_clock::now().time_since_epoch())
                          .count();
  int64_t at = read_at_ns_.load(std::memory_order_relaxed);
  // One caller refreshes; the others take the value cached meanwhile.
  if ((at == 0 || now - at >= max_age_ns_) &&
      read_at_ns_.compare_exchange_strong(at, now, std::memory_order_relaxed)) {
    bytes_.store(ReadResidentBytes(), std::memory_order_relaxed);
  }
  return bytes_.load(std::memory_order_relaxed);
}

}  // namespace kf
