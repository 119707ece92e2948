#include "common/metrics/family.h"

#include <cstdio>
#include <cstdlib>

namespace kf::metrics {

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

void MetricsMisuse(const std::string& what) {
  std::fprintf(stderr, "FATAL: metrics: %s\n", what.c_str());
  std::abort();
}

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)) {
  if (!IsValidMetricName(name_)) MetricsMisuse("invalid metric name '" + name_ + "'");
  for (const std::string& l : label_names_) {
    if (!IsValidLabelName(l)) MetricsMisuse(name_ + ": invalid label name '" + l + "'");
    if (type_ == MetricType::kHistogram && l == "le") {
      MetricsMisuse(name_ + ": a histogram may not have a label named 'le'");
    }
  }
}

void FamilyBase::Render(std::string* out) const {
  std::string samples;
  AppendSamples(&samples);
  if (samples.empty()) return;
  out->append("# HELP ").append(name_).append(" ").append(EscapeHelp(help_)).append("\n");
  out->append("# TYPE ").append(name_).append(" ").append(MetricTypeName(type_)).append("\n");
  out->append(samples);
}

void AppendChildSamples(const Counter& c, const std::string& name, const std::string& labels,
                        std::string* out) {
  AppendSample(out, name, labels, FormatValue(c.value()));
}

void AppendChildSamples(const Gauge& g, const std::string& name, const std::string& labels,
                        std::string* out) {
  AppendSample(out, name, labels, FormatValue(g.value()));
}

void AppendChildSamples(const Histogram& h, const std::string& name, const std::string& labels,
                        std::string* out) {
  const Histogram::Snapshot s = h.Read();
  const std::string bucket = name + "_bucket";
  const std::string prefix = labels.empty() ? "" : labels + ",";
  for (size_t i = 0; i < s.cumulative.size(); ++i) {
    const std::string le = i < h.bounds().size() ? FormatValue(h.bounds()[i]) : "+Inf";
    AppendSample(out, bucket, prefix + "le=\"" + le + "\"", FormatValue(s.cumulative[i]));
  }
  AppendSample(out, name + "_sum", labels, FormatValue(s.sum));
  AppendSample(out, name + "_count", labels, FormatValue(s.count));
}

}  // namespace kf::metrics
