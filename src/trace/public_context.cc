#include "trace/public_context.h"

#include <optional>

#include "trace/traceparent.h"

namespace kf::trace {

SpanContext FromPublic(const kingfisher::TraceContext& tc) {
  SpanContext sc;
  sc.trace_id.bytes = tc.trace_id;
  sc.span_id.bytes = tc.span_id;
  sc.trace_flags = tc.trace_flags;
  sc.remote = true;
  return sc;
}

kingfisher::TraceContext ToPublic(const SpanContext& sc) {
  kingfisher::TraceContext tc;
  tc.trace_id = sc.trace_id.bytes;
  tc.span_id = sc.span_id.bytes;
  tc.trace_flags = sc.trace_flags;
  return tc;
}

Context ContextFromPublic(const kingfisher::TraceContext& tc) {
  return Context().WithRemoteParent(FromPublic(tc));
}

}  // namespace kf::trace

namespace kingfisher {

bool TraceContext::valid() const { return kf::trace::FromPublic(*this).IsValid(); }

std::string TraceContext::ToTraceparent() const {
  return kf::trace::FormatTraceparent(kf::trace::FromPublic(*this));
}

std::optional<TraceContext> TraceContext::FromTraceparent(std::string_view traceparent) {
  std::optional<kf::trace::SpanContext> sc = kf::trace::ParseTraceparent(traceparent);
  if (!sc) return std::nullopt;
  return kf::trace::ToPublic(*sc);
}

}  // namespace kingfisher
