// Samplers (OTel semantics): decide at span start whether a span is recorded and exported.
//
// Thread-safety: samplers are immutable after construction; ShouldSample is thread-safe.
// Ownership: shared (std::shared_ptr<const Sampler>). Errors: none.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "trace/span.h"
#include "trace/span_context.h"

namespace kf::trace {

enum class SamplingDecision {
  kDrop,             // non-recording span, not exported (the context still propagates)
  kRecordOnly,       // recorded, sampled flag clear, not exported
  kRecordAndSample,  // recorded, sampled flag set, exported
};

class Sampler {
 public:
  virtual ~Sampler();
  // `parent` is invalid for a root span; `trace_id` is the new span's trace id.
  virtual SamplingDecision ShouldSample(const SpanContext& parent, const TraceId& trace_id,
                                        std::string_view name, SpanKind kind) const noexcept = 0;
  virtual std::string Description() const = 0;
};

class AlwaysOnSampler final : public Sampler {
 public:
  SamplingDecision ShouldSample(const SpanContext&, const TraceId&, std::string_view,
                                SpanKind) const noexcept override;
  std::string Description() const override { return "AlwaysOnSampler"; }
};

class AlwaysOffSampler final : public Sampler {
 public:
  SamplingDecision ShouldSample(const SpanContext&, const TraceId&, std::string_view,
                                SpanKind) const noexcept override;
  std::string Description() const override { return "AlwaysOffSampler"; }
};

// Samples a deterministic fraction of trace ids: the low 56 bits of the trace id (its random
// part per W3C) below ratio * 2^56. Every process therefore agrees on the same trace.
class TraceIdRatioSampler final : public Sampler {
 public:
  // `ratio` is clamped to [0, 1].
  explicit TraceIdRatioSampler(double ratio);
  SamplingDecision ShouldSample(const SpanContext&, const TraceId& trace_id, std::string_view,
                                SpanKind) const noexcept override;
  std::string Description() const override;

 private:
  double ratio_;
  uint64_t threshold_;  // sample when low56(trace id) < threshold_
};

// Follows a valid parent's sampled flag (remote or local); roots go to `root`.
class ParentBasedSampler final : public Sampler {
 public:
  explicit ParentBasedSampler(std::shared_ptr<const Sampler> root);
  SamplingDecision ShouldSample(const SpanContext& parent, const TraceId& trace_id,
                                std::string_view name, SpanKind kind) const noexcept override;
  std::string Description() const override;

 private:
  std::shared_ptr<const Sampler> root_;
};

}  // namespace kf::trace
