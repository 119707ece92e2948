// Family: one metric name with its HELP text, type and label names, and one child metric
// (Counter, Gauge or Histogram) per set of label values.
//
//   CounterFamily& appends = registry.GetCounter("kf_wal_appends_total", "...",
//                                                {"pchannel", "code"});
//   Counter* ok = appends.With({"kf-dml_0", "OK"});  // cache it: the hot path only calls Inc
//
// With() looks the child up (or creates it) under the family's mutex, allocating the key: it
// is for setup and cold paths. Children are never removed, so the pointer it returns stays
// valid as long as the family, i.e. as long as the Registry that owns it.
//
// Thread-safety: With and rendering are thread-safe (family mutex); the children themselves
// are lock-free (see counter.h, gauge.h, histogram.h). Ownership: the Registry owns families;
// a family owns its children.
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/metrics/counter.h"
#include "common/metrics/exposition.h"
#include "common/metrics/gauge.h"
#include "common/metrics/histogram.h"

namespace kf::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };
// "counter", "gauge", "histogram" (the TYPE line).
std::string_view MetricTypeName(MetricType type);

class FamilyBase {
 public:
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names);
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // Appends `# HELP`, `# TYPE` and every sample, children sorted by label values. Appends
  // nothing when the family has no sample (a labelled family nobody used yet).
  void Render(std::string* out) const;

 protected:
  // The sample lines only.
  virtual void AppendSamples(std::string* out) const = 0;

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
};

// The sample lines of one child; `labels` is its rendered label list without braces.
void AppendChildSamples(const Counter& c, const std::string& name, const std::string& labels,
                        std::string* out);
void AppendChildSamples(const Gauge& g, const std::string& name, const std::string& labels,
                        std::string* out);
void AppendChildSamples(const Histogram& h, const std::string& name, const std::string& labels,
                        std::string* out);

// Aborts the process with `what` (a misuse of the metrics API: a programming error, found by
// the first test that runs the code).
[[noreturn]] void MetricsMisuse(const std::string& what);

template <typename T>
class Family final : public FamilyBase {
 public:
  static constexpr MetricType kType = std::is_same_v<T, Counter> ? MetricType::kCounter
                                      : std::is_same_v<T, Gauge> ? MetricType::kGauge
                                                                 : MetricType::kHistogram;

  // `bounds`: histogram buckets (ValidBuckets); empty for counters and gauges. A family without
  // labels has its one child from the start, so it renders (as 0) before first use.
  Family(std::string name, std::string help, std::vector<std::string> label_names,
         std::vector<double> bounds = {})
      : FamilyBase(std::move(name), std::move(help), kType, std::move(label_names)),
        bounds_(std::move(bounds)) {
    if (kType == MetricType::kHistogram && !ValidBuckets(bounds_)) {
      MetricsMisuse(this->name() + ": histogram buckets must be finite and strictly increasing");
    }
    if (this->label_names().empty()) With(std::vector<std::string>{});
  }

  // The child for these label values, created on first use.
  // REQUIRES: as many values as label names (else the process aborts).
  T* With(std::initializer_list<std::string_view> values) {
    return With(std::vector<std::string>(values.begin(), values.end()));
  }
  T* With(const std::vector<std::string>& values) {
    if (values.size() != label_names().size()) {
      MetricsMisuse(name() + ": " + std::to_string(values.size()) + " label values for " +
                    std::to_string(label_names().size()) + " label names");
    }
    absl::MutexLock lock(&mu_);
    auto it = children_.find(values);
    if (it == children_.end()) {
      Child child;
      child.labels = FormatLabels(label_names(), values);
      if constexpr (kType == MetricType::kHistogram) {
        child.metric = std::make_unique<T>(&bounds_);
      } else {
        child.metric = std::make_unique<T>();
      }
      it = children_.emplace(values, std::move(child)).first;
    }
    return it->second.metric.get();
  }

  const std::vector<double>& bounds() const { return bounds_; }

 protected:
  void AppendSamples(std::string* out) const override {
    absl::MutexLock lock(&mu_);
    for (const auto& [values, child] : children_) {
      AppendChildSamples(*child.metric, name(), child.labels, out);
    }
  }

 private:
  struct Child {
    std::string labels;  // rendered once: `a="x",b="y"`
    std::unique_ptr<T> metric;
  };
  const std::vector<double> bounds_;
  mutable absl::Mutex mu_;
  // std::map: sorted by label values, which is the rendering order.
  std::map<std::vector<std::string>, Child> children_ ABSL_GUARDED_BY(mu_);
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

}  // namespace kf::metrics
