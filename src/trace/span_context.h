// W3C trace identity: TraceId, SpanId and the SpanContext that travels between processes (as a
// `traceparent` header or the `_tc` message property).
//
// Thread-safety: plain values; const methods are safe from any thread.
// Ownership: value types, no pointers.
// Errors: FromHex returns std::nullopt for anything that is not exactly the lowercase hex of
// the right length (all-zero ids parse; IsValid() tells them apart).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kf::trace {

struct TraceId {
  std::array<uint8_t, 16> bytes{};

  // False for the all-zero id, which W3C reserves for "no trace".
  bool IsValid() const;
  // 32 lowercase hex characters.
  std::string ToHex() const;
  static std::optional<TraceId> FromHex(std::string_view hex);
  bool operator==(const TraceId&) const = default;
};

struct SpanId {
  std::array<uint8_t, 8> bytes{};

  // False for the all-zero id.
  bool IsValid() const;
  // 16 lowercase hex characters.
  std::string ToHex() const;
  static std::optional<SpanId> FromHex(std::string_view hex);
  bool operator==(const SpanId&) const = default;
};

// W3C trace-flags bit 0.
inline constexpr uint8_t kTraceFlagSampled = 0x01;

struct SpanContext {
  TraceId trace_id;
  SpanId span_id;
  uint8_t trace_flags = 0;
  // True when the context was received from another process (or read from a message).
  bool remote = false;

  // Both ids valid.
  bool IsValid() const;
  bool IsSampled() const { return (trace_flags & kTraceFlagSampled) != 0; }
  bool operator==(const SpanContext&) const;
};

}  // namespace kf::trace
