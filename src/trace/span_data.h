// SpanData: the immutable record of one ended span that processors and exporters receive, and
// the Resource it belongs to.
//
// Thread-safety: plain values. Ownership: SpanData shares its (immutable) Resource.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trace/span.h"
#include "trace/span_context.h"

namespace kf::trace {

using Attributes = std::map<std::string, AttributeValue>;

// The entity producing telemetry (service.name, telemetry.sdk.*); one per provider.
struct Resource {
  Attributes attributes;
};

struct SpanEvent {
  std::string name;
  uint64_t time_unix_nanos = 0;
  Attributes attributes;
};

struct SpanData {
  std::string name;
  SpanKind kind = SpanKind::kInternal;
  SpanContext context;
  SpanId parent_span_id;  // invalid = root
  bool parent_remote = false;
  uint64_t start_unix_nanos = 0;
  uint64_t end_unix_nanos = 0;
  Attributes attributes;
  std::vector<SpanEvent> events;
  SpanStatusCode status = SpanStatusCode::kUnset;
  std::string status_description;
  std::string scope;  // instrumentation scope (tracer name)
  uint32_t dropped_attributes_count = 0;
  uint32_t dropped_events_count = 0;
  std::shared_ptr<const Resource> resource;  // null = empty resource
};

}  // namespace kf::trace
