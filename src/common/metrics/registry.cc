#include "common/metrics/registry.h"

#include <algorithm>
#include <utility>

namespace kf::metrics {

// A gauge whose samples come from callbacks at scrape time.
class Registry::CallbackFamily final : public FamilyBase {
 public:
  CallbackFamily(std::string name, std::string help, std::vector<std::string> label_names)
      : FamilyBase(std::move(name), std::move(help), MetricType::kGauge, std::move(label_names)) {}

  // Called with the registry's lock held (which also guards callbacks_).
  void Add(uint64_t id, GaugeCallback cb) { callbacks_.emplace(id, std::move(cb)); }
  void Remove(uint64_t id) { callbacks_.erase(id); }

 protected:
  void AppendSamples(std::string* out) const override {
    class Collector final : public GaugeEmitter {
     public:
      explicit Collector(const FamilyBase* family) : family_(family) {}
      void Emit(std::vector<std::string> values, double value) override {
        if (values.size() != family_->label_names().size()) {
          MetricsMisuse(family_->name() + ": callback emitted " + std::to_string(values.size()) +
                        " label values for " + std::to_string(family_->label_names().size()) +
                        " label names");
        }
        samples.emplace(std::move(values), value);  // a duplicate label set keeps the first
      }
      std::map<std::vector<std::string>, double> samples;  // sorted: the rendering order

     private:
      const FamilyBase* family_;
    } collector(this);
    for (const auto& [id, cb] : callbacks_) cb(collector);
    for (const auto& [values, value] : collector.samples) {
      AppendSample(out, name(), FormatLabels(label_names(), values), FormatValue(value));
    }
  }

 private:
  std::map<uint64_t, GaugeCallback> callbacks_;  // by registration order
};

CallbackHandle& CallbackHandle::operator=(CallbackHandle&& other) noexcept {
  if (this != &other) {
    Reset();
    registry_ = std::exchange(other.registry_, nullptr);
    name_ = std::move(other.name_);
    id_ = other.id_;
  }
  return *this;
}

void CallbackHandle::Reset() {
  if (registry_ == nullptr) return;
  std::exchange(registry_, nullptr)->RemoveCallback(name_, id_);
}

Registry::Registry() = default;
Registry::~Registry() = default;

template <typename F>
F& Registry::GetOrCreate(std::string_view name, std::string_view help,
                         std::vector<std::string> labels, std::vector<double> bounds) {
  absl::MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it == families_.end()) {
    auto family = std::make_unique<F>(std::string(name), std::string(help), std::move(labels),
                                      std::move(bounds));
    F& ref = *family;
    families_.emplace(std::string(name), std::move(family));
    return ref;
  }
  auto* existing = dynamic_cast<F*>(it->second.get());
  if (existing == nullptr || existing->label_names() != labels || existing->bounds() != bounds) {
    MetricsMisuse(std::string(name) +
                  " is already registered with another type, other labels or other buckets");
  }
  return *existing;
}

CounterFamily& Registry::GetCounter(std::string_view name, std::string_view help,
                                    std::vector<std::string> label_names) {
  return GetOrCreate<CounterFamily>(name, help, std::move(label_names), {});
}

GaugeFamily& Registry::GetGauge(std::string_view name, std::string_view help,
                                std::vector<std::string> label_names) {
  return GetOrCreate<GaugeFamily>(name, help, std::move(label_names), {});
}

HistogramFamily& Registry::GetHistogram(std::string_view name, std::string_view help,
                                        std::vector<std::string> label_names,
                                        std::vector<double> bounds) {
  return GetOrCreate<HistogramFamily>(name, help, std::move(label_names), std::move(bounds));
}

CallbackHandle Registry::AddGaugeCallback(std::string_view name, std::string_view help,
                                          std::vector<std::string> label_names,
                                          GaugeCallback callback) {
  absl::MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_
             .emplace(std::string(name), std::make_unique<CallbackFamily>(
                                             std::string(name), std::string(help), label_names))
             .first;
  }
  auto* family = dynamic_cast<CallbackFamily*>(it->second.get());
  if (family == nullptr || family->label_names() != label_names) {
    MetricsMisuse(std::string(name) + " is already registered with another type or other labels");
  }
  const uint64_t id = next_callback_id_++;
  family->Add(id, std::move(callback));
  return CallbackHandle(this, std::string(name), id);
}

void Registry::RemoveCallback(const std::string& name, uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = families_.find(name);
  if (it == families_.end()) return;
  static_cast<CallbackFamily*>(it->second.get())->Remove(id);
}

std::string Registry::Render() const {
  std::string out;
  absl::MutexLock lock(&mu_);
  for (const auto& [name, family] : families_) family->Render(&out);
  return out;
}

Registry& DefaultRegistry() {
  static Registry* const kDefault = new Registry();
  return *kDefault;
}

}  // namespace kf::metrics
