#include "trace/batch_span_processor.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "trace/id_generator.h"

namespace kf::trace {
namespace {

// Records batches; optionally blocks inside Export until released, so a test can hold the
// worker thread and fill the queue deterministically.
class FakeExporter final : public SpanExporter {
 public:
  absl::Status Export(const std::vector<SpanData>& spans, absl::Time) noexcept override {
    {
      absl::MutexLock lock(&mu_);
      ++entered_;
    }
    if (block_) release_.WaitForNotification();
    absl::MutexLock lock(&mu_);
    batch_sizes_.push_back(spans.size());
    for (const auto& s : spans) names_.push_back(s.name);
    return absl::OkStatus();
  }
  void Shutdown() noexcept override {
    absl::MutexLock lock(&mu_);
    shutdown_ = true;
  }

  // Waits (bounded only as a hang guard, not a timing assertion) until `n` spans arrived.
  bool WaitForSpans(size_t n) {
    absl::MutexLock lock(&mu_);
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return names_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(60));
  }
  bool WaitForEntered(int n) {
    absl::MutexLock lock(&mu_);
    auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return entered_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(60));
  }
  std::vector<size_t> batch_sizes() {
    absl::MutexLock lock(&mu_);
    return batch_sizes_;
  }
  std::vector<std::string> names() {
    absl::MutexLock lock(&mu_);
    return names_;
  }
  bool shutdown() {
    absl::MutexLock lock(&mu_);
    return shutdown_;
  }

  bool block_ = false;
  absl::Notification release_;

 private:
  absl::Mutex mu_;
  int entered_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<size_t> batch_sizes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

SpanData Sampled(std::string name) {
  SpanData s;
  s.name = std::move(name);
  s.context.trace_id = GenerateTraceId();
  s.context.span_id = GenerateSpanId();
  s.context.trace_flags = kTraceFlagSampled;
  return s;
}

BatchSpanProcessorOptions NoTimer(size_t queue, size_t batch) {
  BatchSpanProcessorOptions o;
  o.max_queue_size = queue;
  o.max_export_batch_size = batch;
  o.schedule_delay = absl::Hours(1);  // only full batches, flushes and shutdown export
  return o;
}

TEST(BatchSpanProcessorTest, ExportsFullBatches) {
  auto exporter = std::make_shared<FakeExporter>();
  BatchSpanProcessor p(exporter, NoTimer(100, 3));
  for (int i = 0; i < 6; ++i) p.OnEnd(Sampled("s" + std::to_string(i)));
  ASSERT_TRUE(exporter->WaitForSpans(6));
  for (size_t n : exporter->batch_sizes()) EXPECT_EQ(n, 3u);
  EXPECT_EQ(exporter->names(), (std::vector<std::string>{"s0", "s1", "s2", "s3", "s4", "s5"}));
}

TEST(BatchSpanProcessorTest, ForceFlushExportsPartialBatch) {
  auto exporter = std::make_shared<FakeExporter>();
  BatchSpanProcessor p(exporter, NoTimer(100, 50));
  for (int i = 0; i < 3; ++i) p.OnEnd(Sampled("s"));
  EXPECT_TRUE(exporter->names().empty());  // below a batch, and the timer is an hour away
  ASSERT_TRUE(p.ForceFlush(absl::Seconds(60)));
  EXPECT_EQ(exporter->names().size(), 3u);
  // An empty flush succeeds too.
  EXPECT_TRUE(p.ForceFlush(absl::Seconds(60)));
}

TEST(BatchSpanProcessorTest, ScheduleDelayExportsWithoutFlush) {
  auto exporter = std::make_shared<FakeExporter>();
  BatchSpanProcessorOptions o = NoTimer(100, 50);
  o.schedule_delay = absl::Milliseconds(1);
  BatchSpanProcessor p(exporter, o);
  p.OnEnd(Sampled("timer"));
  ASSERT_TRUE(exporter->WaitForSpans(1));
}

TEST(BatchSpanProcessorTest, SkipsUnsampledSpans) {
  auto exporter = std::make_shared<FakeExporter>();
  BatchSpanProcessor p(exporter, NoTimer(100, 50));
  SpanData s = Sampled("unsampled");
  s.context.trace_flags = 0;
  p.OnEnd(std::move(s));
  p.OnEnd(Sampled("sampled"));
  ASSERT_TRUE(p.ForceFlush(absl::Seconds(60)));
  EXPECT_EQ(exporter->names(), std::vector<std::string>{"sampled"});
}

TEST(BatchSpanProcessorTest, FullQueueDropsAndCounts) {
  auto exporter = std::make_shared<FakeExporter>();
  exporter->block_ = true;
  BatchSpanProcessor p(exporter, NoTimer(2, 1));
  p.OnEnd(Sampled("a"));
  ASSERT_TRUE(exporter->WaitForEntered(1));  // the worker holds "a" inside Export
  p.OnEnd(Sampled("b"));
  p.OnEnd(Sampled("c"));  // queue is now full (2)
  p.OnEnd(Sampled("d"));  // dropped
  p.OnEnd(Sampled("e"));  // dropped
  EXPECT_EQ(p.dropped_spans(), 2u);
  exporter->release_.Notify();
  ASSERT_TRUE(p.ForceFlush(absl::Seconds(60)));
  EXPECT_EQ(exporter->names(), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(BatchSpanProcessorTest, ShutdownFlushesAndRejectsLaterSpans) {
  auto exporter = std::make_shared<FakeExporter>();
  BatchSpanProcessor p(exporter, NoTimer(100, 50));
  p.OnEnd(Sampled("before"));
  EXPECT_TRUE(p.Shutdown(absl::Seconds(60)));
  EXPECT_EQ(exporter->names(), std::vector<std::string>{"before"});
  EXPECT_TRUE(exporter->shutdown());
  p.OnEnd(Sampled("after"));
  EXPECT_EQ(p.dropped_spans(), 1u);
  EXPECT_TRUE(p.Shutdown(absl::Seconds(60)));  // idempotent
  EXPECT_EQ(exporter->names().size(), 1u);
}

TEST(BatchSpanProcessorTest, DestructorFlushes) {
  auto exporter = std::make_shared<FakeExporter>();
  {
    BatchSpanProcessor p(exporter, NoTimer(100, 50));
    p.OnEnd(Sampled("x"));
  }
  EXPECT_EQ(exporter->names().size(), 1u);
}

TEST(BatchSpanProcessorOptionsTest, DefaultsAndEnv) {
  BatchSpanProcessorOptions d;
  EXPECT_EQ(d.max_queue_size, 2048u);
  EXPECT_EQ(d.schedule_delay, absl::Milliseconds(5000));
  EXPECT_EQ(d.max_export_batch_size, 512u);
  EXPECT_EQ(d.export_timeout, absl::Milliseconds(30000));

  setenv("OTEL_BSP_MAX_QUEUE_SIZE", "10", 1);
  setenv("OTEL_BSP_SCHEDULE_DELAY", "250", 1);
  setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "20", 1);  // above the queue: clamped
  setenv("OTEL_BSP_EXPORT_TIMEOUT", "bogus", 1);      // ignored
  BatchSpanProcessorOptions o = BatchSpanProcessorOptions::FromEnv();
  unsetenv("OTEL_BSP_MAX_QUEUE_SIZE");
  unsetenv("OTEL_BSP_SCHEDULE_DELAY");
  unsetenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE");
  unsetenv("OTEL_BSP_EXPORT_TIMEOUT");
  EXPECT_EQ(o.max_queue_size, 10u);
  EXPECT_EQ(o.schedule_delay, absl::Milliseconds(250));
  EXPECT_EQ(o.max_export_batch_size, 10u);
  EXPECT_EQ(o.export_timeout, absl::Milliseconds(30000));
}

}  // namespace
}  // namespace kf::trace
