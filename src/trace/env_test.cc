#include "trace/env.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <cstdlib>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "trace/sdk_tracer_provider.h"

namespace kf::trace {
namespace {

class EnvTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* v :
         {"OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
          "OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"}) {
      unsetenv(v);
    }
    SetTracerProvider(nullptr);
  }
};

TEST_F(EnvTest, NoEndpointKeepsNoopProvider) {
  auto before = GetTracerProvider();
  TracingHandle h = InitTracingFromEnv("kingfisher");
  EXPECT_FALSE(h.exporting());
  EXPECT_EQ(GetTracerProvider(), before);
  auto [ctx, span] = WalTracer()->StartSpan(Context(), "x");
  EXPECT_TRUE(span->context().IsValid());
  EXPECT_FALSE(span->IsRecording());
}

TEST_F(EnvTest, DisabledWinsOverEndpoint) {
  setenv("OTEL_SDK_DISABLED", "TRUE", 1);
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9", 1);
  TracingHandle h = InitTracingFromEnv("kingfisher");
  EXPECT_FALSE(h.exporting());
}

TEST_F(EnvTest, ExportsToEndpointWithServiceNameAndFlushesOnShutdown) {
  absl::Mutex mu;
  std::vector<std::string> bodies;
  httplib::Server server;
  server.Post("/v1/traces", [&](const httplib::Request& req, httplib::Response& res) {
    absl::MutexLock lock(&mu);
    bodies.push_back(req.body);
    res.status = 200;
  });
  int port = server.bind_to_any_port("127.0.0.1");
  std::jthread t([&] { server.listen_after_bind(); });

  // The base endpoint gets /v1/traces appended (a trailing slash is tolerated).
  setenv("OTEL_EXPORTER_OTLP_ENDPOINT", ("http://127.0.0.1:" + std::to_string(port) + "/").c_str(),
         1);
  setenv("OTEL_SERVICE_NAME", "svc-from-env", 1);
  setenv("OTEL_TRACES_SAMPLER", "always_on", 1);
  {
    TracingHandle h = InitTracingFromEnv("kingfisher");
    ASSERT_TRUE(h.exporting());
    auto [ctx, span] = WalTracer()->StartSpan(Context(), "wal.autocommit");
    EXPECT_TRUE(span->IsRecording());
    span->End();
    TracingHandle moved = std::move(h);
    EXPECT_FALSE(h.exporting());  // NOLINT(bugprone-use-after-move): the moved-from state
    moved.Shutdown();
    // Back to the no-op provider once the handle let go.
    auto [c2, after] = WalTracer()->StartSpan(Context(), "x");
    EXPECT_FALSE(after->IsRecording());
  }
  server.stop();
  absl::MutexLock lock(&mu);
  ASSERT_EQ(bodies.size(), 1u);
  opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest req;
  ASSERT_TRUE(req.ParseFromString(bodies[0]));
  ASSERT_EQ(req.resource_spans_size(), 1);
  bool found = false;
  for (const auto& kv : req.resource_spans(0).resource().attributes()) {
    if (kv.key() == "service.name") {
      EXPECT_EQ(kv.value().string_value(), "svc-from-env");
      found = true;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(req.resource_spans(0).scope_spans(0).spans(0).name(), "wal.autocommit");
}

TEST_F(EnvTest, SamplerAlwaysOffRecordsNothing) {
  setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:9/v1/traces", 1);
  setenv("OTEL_TRACES_SAMPLER", "always_off", 1);
  TracingHandle h = InitTracingFromEnv("kingfisher");
  ASSERT_TRUE(h.exporting());
  auto [ctx, span] = WalTracer()->StartSpan(Context(), "x");
  EXPECT_FALSE(span->IsRecording());
  EXPECT_TRUE(span->context().IsValid());
}

}  // namespace
}  // namespace kf::trace
