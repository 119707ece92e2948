// Gauge: one value that goes up and down (one label set of a GaugeFamily, family.h). For values
// owned by someone else (a WAL's size on disk, open readers) prefer a callback gauge
// (Registry::AddGaugeCallback): nothing to keep in sync on the hot path.
//
// Thread-safety: Set/Add are relaxed atomics (Add is a compare-exchange loop on a double), safe
// from any thread. Ownership: as Counter (children live as long as their Registry).
#pragma once

#include <atomic>

namespace kf::metrics {

class alignas(64) Gauge {
 public:
  Gauge() = default;
  Gauge(const Gauge&) = delete;
  Gauge& operator=(const Gauge&) = delete;

  void Set(double v) { value_.store(v, std::memory_order_relaxed); }
  void Add(double d) { value_.fetch_add(d, std::memory_order_relaxed); }
  void Inc() { Add(1); }
  void Dec() { Add(-1); }
  double value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0};
};

}  // namespace kf::metrics
