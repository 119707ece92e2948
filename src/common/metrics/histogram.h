// Histogram: counts observations into fixed buckets (one label set of a HistogramFamily,
// family.h), rendered the Prometheus way: cumulative `_bucket{le="..."}` series ending in
// `le="+Inf"`, plus `_sum` and `_count`.
//
// Buckets are the inclusive upper bounds (an observation v lands in the first bucket with
// v <= bound), strictly increasing and finite; +Inf is implicit. Internally each bucket counts
// only its own observations (one atomic add per Observe); the cumulative view and `_count` (=
// the +Inf bucket) are computed at scrape time, so `_count` always equals the +Inf bucket.
//
// Thread-safety: Observe is a binary search plus two relaxed atomic adds (count of the bucket,
// sum), no lock and no allocation. The counts live inline (at most kMaxBuckets bounds), so one
// child is one cache-aligned object and children of different pchannels never share a line. A
// scrape concurrent with Observe may see the sum and the counts a few observations apart.
// Ownership: as Counter; `bounds` is shared with the family.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

namespace kf::metrics {

class alignas(64) Histogram {
 public:
  static constexpr size_t kMaxBuckets = 32;

  // REQUIRES: `bounds` is valid (ValidBuckets) and outlives the histogram.
  explicit Histogram(const std::vector<double>* bounds);
  Histogram(const Histogram&) = delete;
  Histogram& operator=(const Histogram&) = delete;

  void Observe(double v);

  // A consistent-enough copy for rendering and tests.
  struct Snapshot {
    std::vector<uint64_t> cumulative;  // per bound, then +Inf last (size bounds + 1)
    double sum = 0;
    uint64_t count = 0;  // == cumulative.back()
  };
  Snapshot Read() const;
  const std::vector<double>& bounds() const { return *bounds_; }

 private:
  const std::vector<double>* const bounds_;
  std::atomic<uint64_t> counts_[kMaxBuckets + 1] = {};  // bounds + 1 used (the last is +Inf)
  std::atomic<double> sum_{0};
};

// Observes the seconds from `start` to now on `h`, when there is one (an optional timer's).
inline void ObserveSecondsSince(Histogram* h, std::chrono::steady_clock::time_point start) {
  if (h == nullptr) return;
  h->Observe(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

// True when `bounds` is non-empty, at most Histogram::kMaxBuckets, finite and strictly
// increasing.
bool ValidBuckets(const std::vector<double>& bounds);

// `count` bounds: start, start*factor, ... REQUIRES: start > 0, factor > 1, count >= 1.
std::vector<double> ExponentialBuckets(double start, double factor, int count);

// Latency buckets in seconds, 50 us to 10 s in 1-2.5-5 steps: from a tmpfs group commit to a
// stalled disk, with readable `le` values.
const std::vector<double>& LatencyBucketsSeconds();

}  // namespace kf::metrics
