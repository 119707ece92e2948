// Converts SpanData into the OTLP protobuf ExportTraceServiceRequest: spans grouped by resource,
// then by instrumentation scope, in first-seen order.
//
// Span.flags = W3C trace flags | 0x100 (remoteness known) | 0x200 when the parent is remote.
// String-array attributes become ArrayValue of strings. Thread-safety: pure function.
#pragma once

#include <vector>

#include "opentelemetry/proto/collector/trace/v1/trace_service.pb.h"
#include "trace/span_data.h"

namespace kf::trace {

opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest ToOtlpRequest(
    const std::vector<SpanData>& spans);

}  // namespace kf::trace
