#include "trace/otlp_http_exporter.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "trace/id_generator.h"
#include "trace/otlp_encoding.h"

namespace kf::trace {
namespace {

using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceResponse;

// An OTLP/HTTP endpoint on 127.0.0.1 whose answers the test scripts per request number.
class FakeCollector {
 public:
  using Responder = std::function<void(int request_no, httplib::Response&)>;

  explicit FakeCollector(Responder responder) : responder_(std::move(responder)) {
    server_.Post("/v1/traces", [this](const httplib::Request& req, httplib::Response& res) {
      int n;
      {
        absl::MutexLock lock(&mu_);
        bodies_.push_back(req.body);
        content_types_.push_back(req.get_header_value("Content-Type"));
        n = static_cast<int>(bodies_.size());
      }
      responder_(n, res);
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    // Listening already: connections queue in the backlog until the accept loop runs.
    thread_ = std::jthread([this] { server_.listen_after_bind(); });
  }
  ~FakeCollector() { server_.stop(); }

  std::string endpoint() const {
    return "http://127.0.0.1:" + std::to_string(port_) + "/v1/traces";
  }
  std::vector<std::string> bodies() {
    absl::MutexLock lock(&mu_);
    return bodies_;
  }
  std::vector<std::string> content_types() {
    absl::MutexLock lock(&mu_);
    return content_types_;
  }

 private:
  Responder responder_;
  httplib::Server server_;
  int port_ = 0;
  absl::Mutex mu_;
  std::vector<std::string> bodies_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> content_types_ ABSL_GUARDED_BY(mu_);
  std::jthread thread_;
};

void Ok(httplib::Response& res, const ExportTraceServiceResponse& body = {}) {
  res.status = 200;
  res.set_content(body.SerializeAsString(), "application/x-protobuf");
}

std::vector<SpanData> TwoSpans() {
  auto resource = std::make_shared<const Resource>(
      Resource{{{"service.name", std::string("kingfisher-test")}}});
  SpanData root;
  root.name = "wal.autocommit";
  root.kind = SpanKind::kProducer;
  root.context = {GenerateTraceId(), GenerateSpanId(), kTraceFlagSampled, false};
  root.start_unix_nanos = 100;
  root.end_unix_nanos = 200;
  root.attributes = {{"message.type", std::string("Insert")},
                     {"message.timetick", int64_t{100}},
                     {"message.replicate", false},
                     {"ratio", 0.5},
                     {"broadcast.vchannels", std::vector<std::string>{"v1", "v2"}}};
  root.scope = "kingfisher.streaming.wal";
  root.resource = resource;
  SpanData child = root;
  child.name = "wal.append";
  child.kind = SpanKind::kInternal;
  child.context.span_id = GenerateSpanId();
  child.parent_span_id = root.context.span_id;
  child.parent_remote = true;
  child.scope = "other.scope";
  child.status = SpanStatusCode::kError;
  child.status_description = "boom";
  child.events.push_back({"exception", 150, {{"exception.message", std::string("boom")}}});
  return {root, child};
}

OtlpHttpExporterOptions Options(const std::string& endpoint) {
  OtlpHttpExporterOptions o;
  o.endpoint = endpoint;
  o.initial_backoff = absl::Milliseconds(1);
  o.max_backoff = absl::Milliseconds(2);
  o.timeout = absl::Seconds(60);
  return o;
}

absl::Time Deadline() { return absl::Now() + absl::Seconds(60); }

TEST(OtlpEncodingTest, GroupsByScopeAndSetsFlags) {
  auto spans = TwoSpans();
  ExportTraceServiceRequest req = ToOtlpRequest(spans);
  ASSERT_EQ(req.resource_spans_size(), 1);
  const auto& rs = req.resource_spans(0);
  ASSERT_EQ(rs.resource().attributes_size(), 1);
  EXPECT_EQ(rs.resource().attributes(0).key(), "service.name");
  EXPECT_EQ(rs.resource().attributes(0).value().string_value(), "kingfisher-test");
  ASSERT_EQ(rs.scope_spans_size(), 2);
  EXPECT_EQ(rs.scope_spans(0).scope().name(), "kingfisher.streaming.wal");
  EXPECT_EQ(rs.scope_spans(1).scope().name(), "other.scope");
  const auto& root = rs.scope_spans(0).spans(0);
  const auto& child = rs.scope_spans(1).spans(0);
  EXPECT_TRUE(root.parent_span_id().empty());
  EXPECT_EQ(root.flags(), 0x101u);
  EXPECT_EQ(child.flags(), 0x301u);
  EXPECT_EQ(child.parent_span_id(), root.span_id());
  EXPECT_EQ(root.trace_id().size(), 16u);
  EXPECT_EQ(root.span_id().size(), 8u);
  EXPECT_EQ(root.kind(), opentelemetry::proto::trace::v1::Span::SPAN_KIND_PRODUCER);
  EXPECT_EQ(root.start_time_unix_nano(), 100u);
  EXPECT_EQ(root.attributes_size(), 5);
  EXPECT_EQ(child.status().code(), opentelemetry::proto::trace::v1::Status::STATUS_CODE_ERROR);
  EXPECT_EQ(child.status().message(), "boom");
  ASSERT_EQ(child.events_size(), 1);
  EXPECT_EQ(child.events(0).name(), "exception");
  EXPECT_EQ(child.events(0).time_unix_nano(), 150u);
}

TEST(OtlpHttpExporterTest, RetriesOnceAfter503WithRetryAfter) {
  FakeCollector collector([](int n, httplib::Response& res) {
    if (n == 1) {
      res.status = 503;
      res.set_header("Retry-After", "0");
      return;
    }
    Ok(res);
  });
  OtlpHttpExporter exporter(Options(collector.endpoint()));
  auto spans = TwoSpans();
  ASSERT_TRUE(exporter.Export(spans, Deadline()).ok());
  EXPECT_EQ(exporter.requests_sent(), 2u);
  auto bodies = collector.bodies();
  ASSERT_EQ(bodies.size(), 2u);
  EXPECT_EQ(collector.content_types()[1], "application/x-protobuf");
  ExportTraceServiceRequest req;
  ASSERT_TRUE(req.ParseFromString(bodies[1]));
  ASSERT_EQ(req.resource_spans_size(), 1);
  ASSERT_EQ(req.resource_spans(0).scope_spans_size(), 2);
  EXPECT_EQ(req.resource_spans(0).scope_spans(0).spans(0).name(), "wal.autocommit");
  EXPECT_EQ(req.resource_spans(0).scope_spans(1).spans(0).name(), "wal.append");
  EXPECT_EQ(bodies[0], bodies[1]);  // the retry resends the same request
}

TEST(OtlpHttpExporterTest, NoRetryOn400) {
  FakeCollector collector([](int, httplib::Response& res) { res.status = 400; });
  OtlpHttpExporter exporter(Options(collector.endpoint()));
  absl::Status s = exporter.Export(TwoSpans(), Deadline());
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_EQ(collector.bodies().size(), 1u);
}

TEST(OtlpHttpExporterTest, PartialSuccessIsNotRetried) {
  FakeCollector collector([](int, httplib::Response& res) {
    ExportTraceServiceResponse body;
    body.mutable_partial_success()->set_rejected_spans(1);
    body.mutable_partial_success()->set_error_message("too old");
    Ok(res, body);
  });
  OtlpHttpExporter exporter(Options(collector.endpoint()));
  EXPECT_TRUE(exporter.Export(TwoSpans(), Deadline()).ok());
  EXPECT_EQ(collector.bodies().size(), 1u);
}

TEST(OtlpHttpExporterTest, BacksOffWithoutRetryAfterAndGivesUp) {
  FakeCollector collector([](int, httplib::Response& res) { res.status = 429; });
  OtlpHttpExporterOptions o = Options(collector.endpoint());
  o.max_attempts = 3;
  OtlpHttpExporter exporter(o);
  absl::Status s = exporter.Export(TwoSpans(), Deadline());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(collector.bodies().size(), 3u);
}

TEST(OtlpHttpExporterTest, RetryAfterBeyondDeadlineStops) {
  FakeCollector collector([](int, httplib::Response& res) {
    res.status = 502;
    res.set_header("Retry-After", "3600");
  });
  OtlpHttpExporter exporter(Options(collector.endpoint()));
  absl::Status s = exporter.Export(TwoSpans(), Deadline());
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_EQ(collector.bodies().size(), 1u);
}

TEST(OtlpHttpExporterTest, ConnectionRefusedFailsWithoutRetry) {
  // A port that was free a moment ago and is closed now.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  OtlpHttpExporter exporter(Options("http://127.0.0.1:" + std::to_string(port) + "/v1/traces"));
  absl::Status s = exporter.Export(TwoSpans(), Deadline());
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(exporter.requests_sent(), 1u);
}

TEST(OtlpHttpExporterTest, ShutdownRejectsExports) {
  OtlpHttpExporter exporter(Options("http://127.0.0.1:9/v1/traces"));
  exporter.Shutdown();
  EXPECT_EQ(exporter.Export(TwoSpans(), Deadline()).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(exporter.requests_sent(), 0u);
}

}  // namespace
}  // namespace kf::trace
