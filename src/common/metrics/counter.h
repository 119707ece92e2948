// Counter: one monotonically increasing count (one label set of a CounterFamily, family.h).
//
// Thread-safety: Inc is a relaxed atomic add (no lock, no allocation), safe from any thread;
// value() is a relaxed load, so a scrape sees each increment eventually, not in any order
// relative to other metrics. Ownership: children are owned by their family (never freed while
// the family lives, which is as long as its Registry), so a Counter* may be cached.
// Aligned to a cache line: counters of different pchannels are bumped by different writer
// threads and must not share one.
#pragma once

#include <atomic>
#include <cstdint>

namespace kf::metrics {

class alignas(64) Counter {
 public:
  Counter() = default;
  Counter(const Counter&) = delete;
  Counter& operator=(const Counter&) = delete;

  void Inc(uint64_t n = 1) { value_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

}  // namespace kf::metrics
