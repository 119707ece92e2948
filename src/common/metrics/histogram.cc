#include "common/metrics/histogram.h"

#include <algorithm>
#include <cmath>

namespace kf::metrics {

Histogram::Histogram(const std::vector<double>* bounds) : bounds_(bounds) {}

void Histogram::Observe(double v) {
  // First bound >= v (le is inclusive); NaN compares false everywhere and lands in +Inf.
  size_t i = bounds_->size();
  if (!std::isnan(v)) {
    i = static_cast<size_t>(std::lower_bound(bounds_->begin(), bounds_->end(), v) -
                            bounds_->begin());
  }
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_.fetch_add(v, std::memory_order_relaxed);
}

Histogram::Snapshot Histogram::Read() const {
  Snapshot s;
  s.cumulative.resize(bounds_->size() + 1);
  uint64_t total = 0;
  for (size_t i = 0; i <= bounds_->size(); ++i) {
    total += counts_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = total;
  }
  s.count = total;
  s.sum = sum_.load(std::memory_order_relaxed);
  return s;
}

bool ValidBuckets(const std::vector<double>& bounds) {
  if (bounds.empty() || bounds.size() > Histogram::kMaxBuckets) return false;
  for (size_t i = 0; i < bounds.size(); ++i) {
    if (!std::isfinite(bounds[i])) return false;
    if (i > 0 && !(bounds[i - 1] < bounds[i])) return false;
  }
  return true;
}

std::vector<double> ExponentialBuckets(double start, double factor, int count) {
  std::vector<double> out;
  double b = start;
  for (int i = 0; i < count; ++i, b *= factor) out.push_back(b);
  return out;
}

const std::vector<double>& LatencyBucketsSeconds() {
  static const auto* kBuckets =
      new std::vector<double>{50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
                              50e-3, 100e-3, 250e-3, 500e-3, 1,    2.5,    5,    10};
  return *kBuckets;
}

}  // namespace kf::metrics
