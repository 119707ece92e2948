#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "common/metrics/exposition.h"
#include "common/metrics/registry.h"

namespace kf::metrics {
namespace {

TEST(MetricsTextTest, SmallRegistryRendersExactly) {
  Registry r;
  CounterFamily& appends =
      r.GetCounter("kf_test_appends_total", "Appends by code.", {"pchannel", "code"});
  appends.With({"kf-dml_1", "OK"})->Inc(3);
  appends.With({"kf-dml_0", "OK"})->Inc();
  appends.With({"kf-dml_0", "CHANNEL_FENCED"})->Inc(2);
  r.GetGauge("kf_test_start_seconds", "Start time.").With({})->Set(1.5);
  HistogramFamily& lat =
      r.GetHistogram("kf_test_latency_seconds", "Latency.", {"pchannel"}, {0.001, 0.01, 0.1});
  Histogram* h = lat.With({"kf-dml_0"});
  h->Observe(0.0005);
  h->Observe(0.01);  // inclusive upper bound: lands in le="0.01"
  h->Observe(0.5);   // above every bound: only +Inf
  CallbackHandle cb =
      r.AddGaugeCallback("kf_test_size_bytes", "Size.", {"pchannel"}, [](GaugeEmitter& e) {
        e.Emit({"kf-dml_1"}, 20);
        e.Emit({"kf-dml_0"}, 10);
      });
  // A labelled family nobody used renders nothing.
  r.GetCounter("kf_test_unused_total", "Unused.", {"code"});

  EXPECT_EQ(r.Render(),
            "# HELP kf_test_appends_total Appends by code.\n"
            "# TYPE kf_test_appends_total counter\n"
            "kf_test_appends_total{pchannel=\"kf-dml_0\",code=\"CHANNEL_FENCED\"} 2\n"
            "kf_test_appends_total{pchannel=\"kf-dml_0\",code=\"OK\"} 1\n"
            "kf_test_appends_total{pchannel=\"kf-dml_1\",code=\"OK\"} 3\n"
            "# HELP kf_test_latency_seconds Latency.\n"
            "# TYPE kf_test_latency_seconds histogram\n"
            "kf_test_latency_seconds_bucket{pchannel=\"kf-dml_0\",le=\"0.001\"} 1\n"
            "kf_test_latency_seconds_bucket{pchannel=\"kf-dml_0\",le=\"0.01\"} 2\n"
            "kf_test_latency_seconds_bucket{pchannel=\"kf-dml_0\",le=\"0.1\"} 2\n"
            "kf_test_latency_seconds_bucket{pchannel=\"kf-dml_0\",le=\"+Inf\"} 3\n"
            "kf_test_latency_seconds_sum{pchannel=\"kf-dml_0\"} 0.5105\n"
            "kf_test_latency_seconds_count{pchannel=\"kf-dml_0\"} 3\n"
            "# HELP kf_test_size_bytes Size.\n"
            "# TYPE kf_test_size_bytes gauge\n"
            "kf_test_size_bytes{pchannel=\"kf-dml_0\"} 10\n"
            "kf_test_size_bytes{pchannel=\"kf-dml_1\"} 20\n"
            "# HELP kf_test_start_seconds Start time.\n"
            "# TYPE kf_test_start_seconds gauge\n"
            "kf_test_start_seconds 1.5\n");
}

TEST(MetricsTextTest, LabelValuesAndHelpAreEscaped) {
  Registry r;
  r.GetCounter("kf_test_total", "Line one\nback\\slash \"quotes\" stay.", {"v"})
      .With({"a\\b\"c\nd"})
      ->Inc();
  EXPECT_EQ(r.Render(),
            "# HELP kf_test_total Line one\\nback\\\\slash \"quotes\" stay.\n"
            "# TYPE kf_test_total counter\n"
            "kf_test_total{v=\"a\\\\b\\\"c\\nd\"} 1\n");
}

TEST(MetricsTextTest, ValuesFormatAsPrometheusParsesThem) {
  EXPECT_EQ(FormatValue(0.0), "0");
  EXPECT_EQ(FormatValue(2.5), "2.5");
  EXPECT_EQ(FormatValue(50e-6), "5e-05");
  EXPECT_EQ(FormatValue(100e-6), "0.0001");
  EXPECT_EQ(FormatValue(1e6), "1000000");
  EXPECT_EQ(FormatValue(1e22), "1e+22");
  EXPECT_EQ(FormatValue(1048576.0), "1048576");
  EXPECT_EQ(FormatValue(-1.0), "-1");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  EXPECT_EQ(FormatValue(uint64_t{18446744073709551615u}), "18446744073709551615");
  // Round trip: what is printed parses back to the same double.
  const double odd = 1732890123.456789;
  EXPECT_EQ(std::stod(FormatValue(odd)), odd);
}

TEST(MetricsTextTest, NamesAreValidated) {
  EXPECT_TRUE(IsValidMetricName("kf_wal:appends_total"));
  EXPECT_FALSE(IsValidMetricName("1abc"));
  EXPECT_FALSE(IsValidMetricName("kf-wal"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_TRUE(IsValidLabelName("pchannel"));
  EXPECT_FALSE(IsValidLabelName("__name"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
}

TEST(HistogramTest, BucketsAreInclusiveAndCumulative) {
  const std::vector<double> bounds = {1, 2, 4};
  Histogram h(&bounds);
  for (double v : {0.0, 1.0, 1.0000001, 2.0, 3.0, 4.0, 4.5, 100.0}) h.Observe(v);
  h.Observe(std::nan(""));  // counted in +Inf only
  Histogram::Snapshot s = h.Read();
  EXPECT_EQ(s.cumulative, (std::vector<uint64_t>{2, 4, 6, 9}));
  EXPECT_EQ(s.count, 9u);
  EXPECT_TRUE(std::isnan(s.sum));  // NaN poisons the sum, as in every Prometheus client
}

TEST(HistogramTest, SumOfObservations) {
  const std::vector<double> bounds = {1};
  Histogram h(&bounds);
  h.Observe(0.25);
  h.Observe(0.5);
  h.Observe(3);
  EXPECT_DOUBLE_EQ(h.Read().sum, 3.75);
  EXPECT_EQ(h.Read().cumulative, (std::vector<uint64_t>{2, 3}));
}

TEST(HistogramTest, BucketHelpers) {
  EXPECT_EQ(ExponentialBuckets(1, 2, 4), (std::vector<double>{1, 2, 4, 8}));
  EXPECT_TRUE(ValidBuckets(LatencyBucketsSeconds()));
  EXPECT_DOUBLE_EQ(LatencyBucketsSeconds().front(), 50e-6);
  EXPECT_DOUBLE_EQ(LatencyBucketsSeconds().back(), 10);
  EXPECT_FALSE(ValidBuckets({}));
  EXPECT_FALSE(ValidBuckets({1, 1}));
  EXPECT_FALSE(ValidBuckets({1, std::numeric_limits<double>::infinity()}));
  EXPECT_FALSE(ValidBuckets(ExponentialBuckets(1, 2, Histogram::kMaxBuckets + 1)));
}

TEST(RegistryTest, GetIsGetOrCreateAndChildrenAreStable) {
  Registry r;
  CounterFamily& a = r.GetCounter("kf_test_total", "Help.", {"code"});
  CounterFamily& b = r.GetCounter("kf_test_total", "Other help is ignored.", {"code"});
  EXPECT_EQ(&a, &b);
  Counter* ok = a.With({"OK"});
  for (int i = 0; i < 100; ++i) a.With({"code" + std::to_string(i)});  // rehash/rebalance
  EXPECT_EQ(a.With({"OK"}), ok);
}

TEST(RegistryTest, CallbacksMergeAndUnregister) {
  Registry r;
  int scrapes = 0;
  CallbackHandle one =
      r.AddGaugeCallback("kf_test_term", "Term.", {"pchannel"}, [&](GaugeEmitter& e) {
        ++scrapes;
        e.Emit({"b"}, 2);
      });
  CallbackHandle two =
      r.AddGaugeCallback("kf_test_term", "Term.", {"pchannel"}, [](GaugeEmitter& e) {
        e.Emit({"a"}, 1);
        e.Emit({"b"}, 99);  // duplicate: the first wins
      });
  EXPECT_EQ(r.Render(),
            "# HELP kf_test_term Term.\n"
            "# TYPE kf_test_term gauge\n"
            "kf_test_term{pchannel=\"a\"} 1\n"
            "kf_test_term{pchannel=\"b\"} 2\n");
  EXPECT_EQ(scrapes, 1);
  CallbackHandle moved = std::move(one);
  moved.Reset();
  two = CallbackHandle();  // move-assigning over a live handle unregisters it
  EXPECT_EQ(r.Render(), "");
  EXPECT_EQ(scrapes, 1);
}

TEST(RegistryTest, ConcurrentIncrementsAreExact) {
  Registry r;
  constexpr int kThreads = 8;
  constexpr int kPerThread = 100000;
  CounterFamily& fam = r.GetCounter("kf_test_total", "Help.", {"code"});
  HistogramFamily& hist = r.GetHistogram("kf_test_seconds", "Help.", {}, {0.5});
  GaugeFamily& gauge = r.GetGauge("kf_test_gauge", "Help.");
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Every thread resolves the child itself: concurrent With() must agree on one child.
      Counter* c = fam.With({"OK"});
      Histogram* h = hist.With({});
      Gauge* g = gauge.With({});
      for (int i = 0; i < kPerThread; ++i) {
        c->Inc();
        h->Observe(i % 2 == 0 ? 0.25 : 1.0);
        g->Add(1);
        if (t == 0 && i % 10000 == 0) r.Render();  // scrapes race with updates
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(fam.With({"OK"})->value(), uint64_t{kThreads} * kPerThread);
  Histogram::Snapshot s = hist.With({})->Read();
  EXPECT_EQ(s.count, uint64_t{kThreads} * kPerThread);
  EXPECT_EQ(s.cumulative[0], uint64_t{kThreads} * kPerThread / 2);
  EXPECT_DOUBLE_EQ(s.sum, kThreads * (kPerThread / 2) * 1.25);
  EXPECT_DOUBLE_EQ(gauge.With({})->value(), kThreads * kPerThread);
}

TEST(RegistryDeathTest, MisuseAborts) {
  Registry r;
  CounterFamily& fam = r.GetCounter("kf_test_total", "Help.", {"code"});
  EXPECT_DEATH(fam.With({"a", "b"}), "2 label values for 1 label names");
  EXPECT_DEATH(r.GetGauge("kf_test_total", "Help.", {"code"}), "already registered");
  EXPECT_DEATH(r.GetCounter("kf_test_total", "Help.", {"other"}), "already registered");
  EXPECT_DEATH(r.GetCounter("bad-name", "Help."), "invalid metric name");
  EXPECT_DEATH(r.GetHistogram("kf_h", "Help.", {"le"}, {1}), "'le'");
  EXPECT_DEATH(r.GetHistogram("kf_h2", "Help.", {}, {2, 1}), "strictly increasing");
}

}  // namespace
}  // namespace kf::metrics
