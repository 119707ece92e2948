#include "trace/otlp_encoding.h"

#include <map>
#include <string>
#include <utility>

namespace kf::trace {
namespace {

namespace common = opentelemetry::proto::common::v1;
namespace otlp = opentelemetry::proto::trace::v1;
using opentelemetry::proto::collector::trace::v1::ExportTraceServiceRequest;

// Span.flags bits beyond the W3C trace flags (docs/tracing.md appendix).
constexpr uint32_t kFlagParentRemoteKnown = 0x100;
constexpr uint32_t kFlagParentRemote = 0x200;

void SetValue(const AttributeValue& v, common::AnyValue* out) {
  struct Visitor {
    common::AnyValue* out;
    void operator()(bool b) const { out->set_bool_value(b); }
    void operator()(int64_t i) const { out->set_int_value(i); }
    void operator()(double d) const { out->set_double_value(d); }
    void operator()(const std::string& s) const { out->set_string_value(s); }
    void operator()(const std::vector<std::string>& a) const {
      auto* arr = out->mutable_array_value();
      for (const auto& s : a) arr->add_values()->set_string_value(s);
    }
  };
  std::visit(Visitor{out}, v);
}

void AddAttributes(const Attributes& attrs,
                   google::protobuf::RepeatedPtrField<common::KeyValue>* out) {
  for (const auto& [key, value] : attrs) {
    auto* kv = out->Add();
    kv->set_key(key);
    SetValue(value, kv->mutable_value());
  }
}

otlp::Span_SpanKind ToProto(SpanKind k) {
  switch (k) {
    case SpanKind::kInternal:
      return otlp::Span_SpanKind_SPAN_KIND_INTERNAL;
    case SpanKind::kServer:
      return otlp::Span_SpanKind_SPAN_KIND_SERVER;
    case SpanKind::kClient:
      return otlp::Span_SpanKind_SPAN_KIND_CLIENT;
    case SpanKind::kProducer:
      return otlp::Span_SpanKind_SPAN_KIND_PRODUCER;
    case SpanKind::kConsumer:
      return otlp::Span_SpanKind_SPAN_KIND_CONSUMER;
  }
  return otlp::Span_SpanKind_SPAN_KIND_UNSPECIFIED;
}

otlp::Status_StatusCode ToProto(SpanStatusCode c) {
  switch (c) {
    case SpanStatusCode::kUnset:
      return otlp::Status_StatusCode_STATUS_CODE_UNSET;
    case SpanStatusCode::kOk:
      return otlp::Status_StatusCode_STATUS_CODE_OK;
    case SpanStatusCode::kError:
      return otlp::Status_StatusCode_STATUS_CODE_ERROR;
  }
  return otlp::Status_StatusCode_STATUS_CODE_UNSET;
}

template <size_t N>
std::string Bytes(const std::array<uint8_t, N>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), N);
}

void FillSpan(const SpanData& s, otlp::Span* out) {
  out->set_trace_id(Bytes(s.context.trace_id.bytes));
  out->set_span_id(Bytes(s.context.span_id.bytes));
  if (s.parent_span_id.IsValid()) out->set_parent_span_id(Bytes(s.parent_span_id.bytes));
  out->set_name(s.name);
  out->set_kind(ToProto(s.kind));
  out->set_start_time_unix_nano(s.start_unix_nanos);
  out->set_end_time_unix_nano(s.end_unix_nanos);
  AddAttributes(s.attributes, out->mutable_attributes());
  out->set_dropped_attributes_count(s.dropped_attributes_count);
  for (const auto& e : s.events) {
    auto* ev = out->add_events();
    ev->set_time_unix_nano(e.time_unix_nanos);
    ev->set_name(e.name);
    AddAttributes(e.attributes, ev->mutable_attributes());
  }
  out->set_dropped_events_count(s.dropped_events_count);
  if (s.status != SpanStatusCode::kUnset) {
    out->mutable_status()->set_code(ToProto(s.status));
    if (s.status == SpanStatusCode::kError)
      out->mutable_status()->set_message(s.status_description);
  }
  uint32_t flags = s.context.trace_flags | kFlagParentRemoteKnown;
  if (s.parent_span_id.IsValid() && s.parent_remote) flags |= kFlagParentRemote;
  out->set_flags(flags);
}

}  // namespace

ExportTraceServiceRequest ToOtlpRequest(const std::vector<SpanData>& spans) {
  ExportTraceServiceRequest req;
  // Groups keyed by resource identity (one per provider) and scope name, kept in first-seen
  // order so the encoding is deterministic.
  std::map<const Resource*, otlp::ResourceSpans*> by_resource;
  std::map<std::pair<const Resource*, std::string>, otlp::ScopeSpans*> by_scope;
  for (const auto& s : spans) {
    const Resource* res = s.resource.get();
    auto [rit, new_resource] = by_resource.try_emplace(res, nullptr);
    if (new_resource) {
      rit->second = req.add_resource_spans();
      if (res != nullptr)
        AddAttributes(res->attributes, rit->second->mutable_resource()->mutable_attributes());
    }
    auto [sit, new_scope] = by_scope.try_emplace({res, s.scope}, nullptr);
    if (new_scope) {
      sit->second = rit->second->add_scope_spans();
      sit->second->mutable_scope()->set_name(s.scope);
    }
    FillSpan(s, sit->second->add_spans());
  }
  return req;
}

}  // namespace kf::trace
