#include "message/message_trace.h"

#include <string>
#include <vector>

#include "common/text_codec.h"
#include "kingfisher/v1/message.pb.h"
#include "trace/tracer.h"

namespace kf {
namespace {

template <size_t N>
std::string Bytes(const std::array<uint8_t, N>& b) {
  return std::string(reinterpret_cast<const char*>(b.data()), N);
}

template <size_t N>
bool CopyBytes(const std::string& in, std::array<uint8_t, N>* out) {
  if (in.size() != N) return false;
  std::copy(in.begin(), in.end(), out->begin());
  return true;
}

void Write(const trace::Context& ctx, MutableMessage* msg, bool overwrite) {
  if (msg == nullptr || msg->type() == MessageType::kTimeTick) return;
  const trace::SpanContext sc = ctx.span_context();
  if (!sc.IsValid()) return;
  if (!overwrite && msg->HasProperty(prop::kTraceContext)) return;
  kingfisher::v1::TraceContextHeader h;
  h.set_trace_id(Bytes(sc.trace_id.bytes));
  h.set_span_id(Bytes(sc.span_id.bytes));
  h.set_trace_flags(sc.trace_flags);
  msg->SetProperty(std::string(prop::kTraceContext), Base64Encode(h.SerializeAsString()));
}

// The span returned for messages that are never traced; shared, so it costs nothing.
const std::shared_ptr<trace::Span>& NoopSpan() {
  static const auto* span = new std::shared_ptr<trace::Span>(
      std::make_shared<trace::NonRecordingSpan>(trace::SpanContext{}));
  return *span;
}

void SetMessageAttributes(const MutableMessage& msg, trace::Span* span) {
  span->SetAttribute("message.type", std::string(MessageTypeName(msg.type())));
  span->SetAttribute("message.vchannel", std::string(msg.vchannel()));
  if (auto tt = msg.timetick()) {
    span->SetAttribute("message.timetick", static_cast<int64_t>(tt->value()));
  }
  span->SetAttribute("message.replicate", msg.HasProperty(prop::kReplicate));
  if (auto txn = msg.txn()) span->SetAttribute("txn.id", int64_t{txn->txn_id()});
  if (auto bh = msg.broadcast_header()) {
    span->SetAttribute("broadcast.id", static_cast<int64_t>(bh->broadcast_id()));
    span->SetAttribute("broadcast.vchannels",
                       std::vector<std::string>(bh->vchannels().begin(), bh->vchannels().end()));
  }
}

}  // namespace

void InjectTraceContext(const trace::Context& ctx, MutableMessage* msg) {
  Write(ctx, msg, /*overwrite=*/false);
}

void OverwriteTraceContext(const trace::Context& ctx, MutableMessage* msg) {
  Write(ctx, msg, /*overwrite=*/true);
}

trace::Context ExtractTraceContext(const trace::Context& ctx, const MutableMessage& msg) {
  auto text = msg.GetProperty(prop::kTraceContext);
  if (!text) return ctx;
  auto bytes = Base64Decode(*text);
  if (!bytes) return ctx;
  kingfisher::v1::TraceContextHeader h;
  if (!h.ParseFromString(*bytes) || h.trace_flags() > 0xff) return ctx;
  trace::SpanContext sc;
  if (!CopyBytes(h.trace_id(), &sc.trace_id.bytes) || !CopyBytes(h.span_id(), &sc.span_id.bytes)) {
    return ctx;
  }
  sc.trace_flags = static_cast<uint8_t>(h.trace_flags());
  sc.remote = true;
  return ctx.WithRemoteParent(sc);  // unchanged for all-zero ids
}

std::pair<trace::Context, std::shared_ptr<trace::Span>> StartSpan(const trace::Context& ctx,
                                                                  std::string_view name,
                                                                  trace::SpanKind kind) {
  return trace::WalTracer()->StartSpan(ctx, name, kind);
}

std::pair<trace::Context, std::shared_ptr<trace::Span>> StartSpanForMessage(
    const trace::Context& ctx, const MutableMessage* msg, std::string_view name,
    trace::SpanKind kind) {
  if (msg == nullptr || msg->type() == MessageType::kTimeTick) return {ctx, NoopSpan()};
  auto [child, span] = trace::WalTracer()->StartSpan(ctx, name, kind);
  // Attributes only when recording: decoding headers per message is wasted when tracing is off.
  if (span->IsRecording()) SetMessageAttributes(*msg, span.get());
  return {std::move(child), std::move(span)};
}

}  // namespace kf
