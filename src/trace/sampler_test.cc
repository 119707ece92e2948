#include "trace/sampler.h"

#include <gtest/gtest.h>

#include <memory>

#include "trace/id_generator.h"

namespace kf::trace {
namespace {

TraceId TraceWithLow56(uint64_t low56) {
  TraceId id;
  id.bytes[0] = 0xff;  // the high part must not matter
  for (int i = 15; i >= 9; --i) {
    id.bytes[i] = static_cast<uint8_t>(low56 & 0xff);
    low56 >>= 8;
  }
  return id;
}

SpanContext Parent(bool sampled, bool remote) {
  SpanContext sc;
  sc.trace_id = GenerateTraceId();
  sc.span_id = GenerateSpanId();
  sc.trace_flags = sampled ? kTraceFlagSampled : 0;
  sc.remote = remote;
  return sc;
}

TEST(SamplerTest, AlwaysOnAndOff) {
  EXPECT_EQ(AlwaysOnSampler().ShouldSample({}, GenerateTraceId(), "x", SpanKind::kInternal),
            SamplingDecision::kRecordAndSample);
  EXPECT_EQ(AlwaysOffSampler().ShouldSample(Parent(true, false), GenerateTraceId(), "x",
                                            SpanKind::kInternal),
            SamplingDecision::kDrop);
}

TEST(SamplerTest, TraceIdRatioUsesLow56Bits) {
  TraceIdRatioSampler half(0.5);
  const uint64_t mid = uint64_t{1} << 55;
  EXPECT_EQ(half.ShouldSample({}, TraceWithLow56(mid - 1), "x", SpanKind::kInternal),
            SamplingDecision::kRecordAndSample);
  EXPECT_EQ(half.ShouldSample({}, TraceWithLow56(mid), "x", SpanKind::kInternal),
            SamplingDecision::kDrop);
  const uint64_t max56 = (uint64_t{1} << 56) - 1;
  EXPECT_EQ(
      TraceIdRatioSampler(1.0).ShouldSample({}, TraceWithLow56(max56), "x", SpanKind::kInternal),
      SamplingDecision::kRecordAndSample);
  EXPECT_EQ(TraceIdRatioSampler(0.0).ShouldSample({}, TraceWithLow56(0), "x", SpanKind::kInternal),
            SamplingDecision::kDrop);
  // Out-of-range ratios clamp.
  EXPECT_EQ(
      TraceIdRatioSampler(7.0).ShouldSample({}, TraceWithLow56(max56), "x", SpanKind::kInternal),
      SamplingDecision::kRecordAndSample);
}

TEST(SamplerTest, TraceIdRatioSamplesRoughlyTheRatio) {
  TraceIdRatioSampler quarter(0.25);
  int sampled = 0;
  for (int i = 0; i < 4000; ++i) {
    sampled += quarter.ShouldSample({}, GenerateTraceId(), "x", SpanKind::kInternal) ==
               SamplingDecision::kRecordAndSample;
  }
  // 1000 expected; the bounds are > 10 standard deviations wide.
  EXPECT_GT(sampled, 700);
  EXPECT_LT(sampled, 1300);
}

TEST(SamplerTest, ParentBasedFollowsParent) {
  ParentBasedSampler on(std::make_shared<AlwaysOnSampler>());
  ParentBasedSampler off(std::make_shared<AlwaysOffSampler>());
  for (bool remote : {false, true}) {
    EXPECT_EQ(off.ShouldSample(Parent(true, remote), GenerateTraceId(), "x", SpanKind::kInternal),
              SamplingDecision::kRecordAndSample);
    EXPECT_EQ(on.ShouldSample(Parent(false, remote), GenerateTraceId(), "x", SpanKind::kInternal),
              SamplingDecision::kDrop);
  }
  EXPECT_EQ(on.ShouldSample({}, GenerateTraceId(), "x", SpanKind::kInternal),
            SamplingDecision::kRecordAndSample);
  EXPECT_EQ(off.ShouldSample({}, GenerateTraceId(), "x", SpanKind::kInternal),
            SamplingDecision::kDrop);
}

}  // namespace
}  // namespace kf::trace
