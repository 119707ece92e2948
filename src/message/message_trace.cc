#include "message/message_trace.h"

#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "common/text_codec.h"
#include "kingfisher/v1/message.pb.h"
#include "trace/tracer.h"

namespace kf {
namespace {

// kingfisher.v1.TraceContextHeader exactly as protobuf serializes it: trace_id = 1 and
// span_id = 2 (LEN, always 16 and 8 bytes here), trace_flags = 3 (VARINT, omitted when 0 as
// proto3 does). Hand-written because `_tc` is overwritten on every append and the generated
// message costs four heap allocations per call (two id strings, the serialization and a
// temporary); message_trace_test checks the bytes against the generated code.
// The header's bytes (at most 2 + 16 + 2 + 8 + 3) as base64, written to `out`; returns the
// length. No allocation: this runs twice per append.
constexpr size_t kMaxHeaderBytes = 2 + 16 + 2 + 8 + 3;
constexpr size_t kMaxHeaderText = Base64EncodedSize(kMaxHeaderBytes);
static_assert(kMaxHeaderText <= AppendStamp::kMaxTraceContextText);

size_t EncodeTraceContextHeader(const trace::SpanContext& sc, char* out) {
  std::array<char, kMaxHeaderBytes> buf;
  size_t n = 0;
  auto put_bytes = [&](char tag, const auto& bytes) {
    buf[n++] = tag;
    buf[n++] = static_cast<char>(bytes.size());
    std::memcpy(buf.data() + n, bytes.data(), bytes.size());
    n += bytes.size();
  };
  put_bytes(0x0A, sc.trace_id.bytes);
  put_bytes(0x12, sc.span_id.bytes);
  if (sc.trace_flags != 0) {
    buf[n++] = 0x18;
    uint32_t v = sc.trace_flags;
    while (v >= 0x80) {
      buf[n++] = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    buf[n++] = static_cast<char>(v);
  }
  return Base64EncodeTo(std::string_view(buf.data(), n), out);
}

bool IsTimeTick(const MutableMessage& msg) { return msg.type() == MessageType::kTimeTick; }

template <size_t N>
bool CopyBytes(std::string_view in, std::array<uint8_t, N>* out) {
  if (in.size() != N) return false;
  std::copy(in.begin(), in.end(), out->begin());
  return true;
}

// The fields of a TraceContextHeader, viewing the bytes they were parsed from.
struct TraceContextFields {
  std::string_view trace_id, span_id;
  uint32_t trace_flags = 0;
};

// Parses the header bytes as protobuf does, for the shape every writer produces: fields 1-3
// in any order (repeated ones: the last wins), ids shorter than 128 bytes, flags in at most 5
// varint bytes (truncated to 32 bits, as a uint32 field is). nullopt for anything else, which
// the generated parser then judges. Extraction runs for every consumed message, and the
// generated message cost three allocations per call.
std::optional<TraceContextFields> ParseCommonShape(std::string_view b) {
  TraceContextFields f;
  size_t i = 0;
  while (i < b.size()) {
    const auto tag = static_cast<uint8_t>(b[i++]);
    if (tag == 0x0A || tag == 0x12) {
      if (i == b.size()) return std::nullopt;
      const auto len = static_cast<uint8_t>(b[i++]);
      if (len >= 0x80 || len > b.size() - i) return std::nullopt;
      (tag == 0x0A ? f.trace_id : f.span_id) = b.substr(i, len);
      i += len;
    } else if (tag == 0x18) {
      uint64_t v = 0;
      for (int shift = 0;; shift += 7) {
        if (i == b.size() || shift > 28) return std::nullopt;
        const auto byte = static_cast<uint8_t>(b[i++]);
        v |= static_cast<uint64_t>(byte & 0x7f) << shift;
        if (byte < 0x80) break;
      }
      f.trace_flags = static_cast<uint32_t>(v);
    } else {
      return std::nullopt;
    }
  }
  return f;
}

// The remote span context a `_tc` text carries; nullopt unless it is base64 of a valid header
// with 16- and 8-byte ids and flags that fit W3C's 8 bits.
std::optional<trace::SpanContext> ParseTraceContextText(std::string_view text) {
  char buf[Base64DecodedCapacity(2 * kMaxHeaderText)];  // writers' texts decode on the stack
  std::string long_bytes;
  std::string_view bytes;
  if (Base64DecodedCapacity(text.size()) <= sizeof(buf)) {
    auto n = Base64DecodeTo(text, buf);
    if (!n) return std::nullopt;
    bytes = std::string_view(buf, *n);
  } else {
    auto decoded = Base64Decode(text);
    if (!decoded) return std::nullopt;
    long_bytes = std::move(*decoded);
    bytes = long_bytes;
  }
  trace::SpanContext sc;
  auto fill = [&sc](std::string_view trace_id, std::string_view span_id, uint32_t flags) {
    if (flags > 0xff || !CopyBytes(trace_id, &sc.trace_id.bytes) ||
        !CopyBytes(span_id, &sc.span_id.bytes)) {
      return false;
    }
    sc.trace_flags = static_cast<uint8_t>(flags);
    sc.remote = true;
    return true;
  };
  if (auto f = ParseCommonShape(bytes)) {
    if (!fill(f->trace_id, f->span_id, f->trace_flags)) return std::nullopt;
  } else {
    kingfisher::v1::TraceContextHeader h;
    if (!h.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
        !fill(h.trace_id(), h.span_id(), h.trace_flags())) {
      return std::nullopt;
    }
  }
  return sc;
}

void Write(const trace::Context& ctx, MutableMessage* msg, bool overwrite) {
  if (msg == nullptr || IsTimeTick(*msg)) return;
  const trace::SpanContext sc = ctx.span_context();
  if (!sc.IsValid()) return;
  if (!overwrite && msg->HasProperty(prop::kTraceContext)) return;
  char text[kMaxHeaderText];
  msg->AssignProperty(prop::kTraceContext,
                      std::string_view(text, EncodeTraceContextHeader(sc, text)));
}

// The span returned for messages that are never traced; shared, so it costs nothing.
const std::shared_ptr<trace::Span>& NoopSpan() {
  static const auto* span = new std::shared_ptr<trace::Span>(
      std::make_shared<trace::NonRecordingSpan>(trace::SpanContext{}));
  return *span;
}

void SetTimeTickAttribute(TimeTick tt, trace::Span* span) {
  span->SetAttribute("message.timetick", static_cast<int64_t>(tt.value()));
}

void SetMessageAttributes(const MutableMessage& msg, trace::Span* span) {
  span->SetAttribute("message.type", std::string(MessageTypeName(msg.type())));
  span->SetAttribute("message.vchannel", std::string(msg.vchannel()));
  if (auto tt = msg.timetick()) SetTimeTickAttribute(*tt, span);
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

void EncodeWithTraceContext(const trace::Context& ctx, const MutableMessage& msg,
                            std::string* dst) {
  const trace::SpanContext sc = ctx.span_context();
  if (IsTimeTick(msg) || !sc.IsValid()) return msg.EncodeTo(dst);
  char text[kMaxHeaderText];
  msg.EncodeWithTraceContextTo(std::string_view(text, EncodeTraceContextHeader(sc, text)), dst);
}

trace::Context ExtractTraceContext(const trace::Context& ctx, const MutableMessage& msg) {
  auto text = msg.GetProperty(prop::kTraceContext);
  if (!text) return ctx;
  auto sc = ParseTraceContextText(*text);
  if (!sc) return ctx;
  return ctx.WithRemoteParent(*sc);  // unchanged for all-zero ids
}

std::pair<trace::Context, std::shared_ptr<trace::Span>> StartSpan(const trace::Context& ctx,
                                                                  std::string_view name,
                                                                  trace::SpanKind kind) {
  return trace::StartWalSpan(ctx, name, kind);
}

std::pair<trace::Context, std::shared_ptr<trace::Span>> StartSpanForMessage(
    const trace::Context& ctx, const MutableMessage* msg, std::string_view name,
    trace::SpanKind kind) {
  if (msg == nullptr || IsTimeTick(*msg)) return {ctx, NoopSpan()};
  auto [child, span] = trace::StartWalSpan(ctx, name, kind);
  // Attributes only when recording: decoding headers per message is wasted when tracing is off.
  if (span->IsRecording()) SetMessageAttributes(*msg, span.get());
  return {std::move(child), std::move(span)};
}

std::pair<trace::Context, std::shared_ptr<trace::Span>> StartSpanForStampedMessage(
    const trace::Context& ctx, const MutableMessage& msg, std::string_view name,
    AppendStamp* stamp) {
  if (IsTimeTick(msg)) return {ctx, NoopSpan()};
  auto [child, span] = trace::StartWalSpan(ctx, name, trace::SpanKind::kInternal);
  if (span->IsRecording()) {
    SetMessageAttributes(msg, span.get());
    SetTimeTickAttribute(stamp->timetick, span.get());
  }
  const trace::SpanContext sc = child.span_context();
  if (sc.IsValid()) {
    stamp->trace_context_size = EncodeTraceContextHeader(sc, stamp->trace_context.data());
  }
  return {std::move(child), std::move(span)};
}

}  // namespace kf
