#include "trace/sampler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kf::trace {
namespace {
constexpr uint64_t k56 = uint64_t{1} << 56;
}  // namespace

Sampler::~Sampler() = default;

SamplingDecision AlwaysOnSampler::ShouldSample(const SpanContext&, const TraceId&, std::string_view,
                                               SpanKind) const noexcept {
  return SamplingDecision::kRecordAndSample;
}

SamplingDecision AlwaysOffSampler::ShouldSample(const SpanContext&, const TraceId&,
                                                std::string_view, SpanKind) const noexcept {
  return SamplingDecision::kDrop;
}

TraceIdRatioSampler::TraceIdRatioSampler(double ratio)
    : ratio_(std::isnan(ratio) ? 0.0 : std::clamp(ratio, 0.0, 1.0)),
      threshold_(ratio_ >= 1.0 ? k56 : static_cast<uint64_t>(ratio_ * static_cast<double>(k56))) {}

SamplingDecision TraceIdRatioSampler::ShouldSample(const SpanContext&, const TraceId& trace_id,
                                                   std::string_view, SpanKind) const noexcept {
  // Big-endian read of bytes 9..15: the part W3C guarantees random.
  uint64_t low56 = 0;
  for (size_t i = 9; i < 16; ++i) low56 = (low56 << 8) | trace_id.bytes[i];
  return low56 < threshold_ ? SamplingDecision::kRecordAndSample : SamplingDecision::kDrop;
}

std::string TraceIdRatioSampler::Description() const {
  return absl::StrCat("TraceIdRatioBased{", ratio_, "}");
}

ParentBasedSampler::ParentBasedSampler(std::shared_ptr<const Sampler> root)
    : root_(root ? std::move(root) : std::make_shared<AlwaysOnSampler>()) {}

SamplingDecision ParentBasedSampler::ShouldSample(const SpanContext& parent,
                                                  const TraceId& trace_id, std::string_view name,
                                                  SpanKind kind) const noexcept {
  if (!parent.IsValid()) return root_->ShouldSample(parent, trace_id, name, kind);
  return parent.IsSampled() ? SamplingDecision::kRecordAndSample : SamplingDecision::kDrop;
}

std::string ParentBasedSampler::Description() const {
  return absl::StrCat("ParentBased{root=", root_->Description(), "}");
}

}  // namespace kf::trace
