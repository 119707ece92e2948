// OtlpReceiver: test helper that runs tests/otlp/receiver.js, an OTLP/HTTP trace receiver that
// decodes with protobufjs and the upstream OTLP .proto files of @elastic/mockotlpserver, i.e. a
// decoder we did not write. Used to check what our exporter puts on the wire.
//
// Start() installs the node dependencies when missing (`npm ci`, serialized across test
// processes with a file lock), starts `node receiver.js 0 <tmpfile>` on a free loopback port
// and waits for its "ready" line. Spans() reads the JSON lines decoded so far.
//
// Thread-safety: Spans()/WaitForSpans() may be called from any thread; Stop() from one.
// Ownership: owns the child process (stopped by Stop or the destructor; it also exits when our
// end of its stdin pipe closes) and the temporary output file.
// Errors: Start returns FAILED_PRECONDITION when node/npm is unusable, DEADLINE_EXCEEDED when
// the receiver does not become ready; WaitForSpans returns DEADLINE_EXCEEDED.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "nlohmann/json.hpp"
#include "trace/span.h"

namespace kf::testing {

struct DecodedEvent {
  std::string name;
  uint64_t time_unix_nano = 0;
  std::map<std::string, trace::AttributeValue> attributes;
};

// One span as the independent decoder saw it. Ids are lowercase hex ("" for a missing parent).
struct DecodedSpan {
  std::string trace_id;
  std::string span_id;
  std::string parent_span_id;
  std::string name;
  int kind = 0;  // OTLP SpanKind number (INTERNAL = 1 ... CONSUMER = 5)
  uint32_t flags = 0;
  uint64_t start_time_unix_nano = 0;
  uint64_t end_time_unix_nano = 0;
  // OTLP AnyValue mapped onto our attribute type (string arrays only; other arrays are kept in
  // `raw` only).
  std::map<std::string, trace::AttributeValue> attributes;
  std::vector<DecodedEvent> events;
  int status_code = 0;  // 0 UNSET, 1 OK, 2 ERROR
  std::string status_message;
  std::string scope;
  std::string service_name;
  nlohmann::json raw;  // the whole JSON line
};

class OtlpReceiver {
 public:
  static absl::StatusOr<std::unique_ptr<OtlpReceiver>> Start(
      absl::Duration timeout = absl::Seconds(120));
  ~OtlpReceiver();
  OtlpReceiver(const OtlpReceiver&) = delete;
  OtlpReceiver& operator=(const OtlpReceiver&) = delete;

  int port() const { return port_; }
  // For OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:<port>".
  std::string base_url() const;
  // For OtlpHttpExporterOptions::endpoint / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT.
  std::string traces_endpoint() const { return base_url() + "/v1/traces"; }

  // Every span decoded so far, in arrival order.
  absl::StatusOr<std::vector<DecodedSpan>> Spans() const;
  // Polls until at least `n` spans arrived (a hang guard for spans exported asynchronously;
  // a flushed exporter needs no waiting: the receiver writes before it answers 200).
  absl::StatusOr<std::vector<DecodedSpan>> WaitForSpans(size_t n, absl::Duration timeout);

  void Stop();

 private:
  OtlpReceiver() = default;

  pid_t pid_ = -1;
  int stdin_fd_ = -1;  // its stdin: closing it makes the receiver exit
  int port_ = 0;
  std::string output_path_;
};

// The directory holding receiver.js and package.json.
std::string OtlpReceiverDir();

}  // namespace kf::testing
