#include "trace/traceparent.h"

namespace kf::trace {
namespace {
constexpr size_t kLength = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2

int LowerHex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}
}  // namespace

std::optional<SpanContext> ParseTraceparent(std::string_view h) {
  if (h.size() != kLength || h[2] != '-' || h[35] != '-' || h[52] != '-') return std::nullopt;
  // Version 00 only: a future version may change the layout, and "ff" is forbidden outright.
  if (h.substr(0, 2) != "00") return std::nullopt;
  auto trace_id = TraceId::FromHex(h.substr(3, 32));
  auto span_id = SpanId::FromHex(h.substr(36, 16));
  int flags_hi = LowerHex(h[53]);
  int flags_lo = LowerHex(h[54]);
  if (!trace_id || !span_id || flags_hi < 0 || flags_lo < 0) return std::nullopt;
  if (!trace_id->IsValid() || !span_id->IsValid()) return std::nullopt;
  SpanContext sc;
  sc.trace_id = *trace_id;
  sc.span_id = *span_id;
  sc.trace_flags = static_cast<uint8_t>((flags_hi << 4) | flags_lo);
  sc.remote = true;
  return sc;
}

std::string FormatTraceparent(const SpanContext& sc) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(kLength);
  out.append("00-").append(sc.trace_id.ToHex()).append("-").append(sc.span_id.ToHex());
  out.push_back('-');
  out.push_back(kHex[sc.trace_flags >> 4]);
  out.push_back(kHex[sc.trace_flags & 0xf]);
  return out;
}

}  // namespace kf::trace
