#include "trace/span_context.h"

#include <cstdint>
#include <cstring>

namespace kf::trace {
namespace {

constexpr char kHex[] = "0123456789abcdef";

template <size_t N>
std::string ToHexImpl(const std::array<uint8_t, N>& bytes) {
  std::string out(2 * N, '0');
  for (size_t i = 0; i < N; ++i) {
    out[2 * i] = kHex[bytes[i] >> 4];
    out[2 * i + 1] = kHex[bytes[i] & 0xf];
  }
  return out;
}

// Lowercase only: W3C ids are lowercase, and accepting both would make two spellings of one id.
int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

template <size_t N>
bool FromHexImpl(std::string_view hex, std::array<uint8_t, N>* out) {
  if (hex.size() != 2 * N) return false;
  for (size_t i = 0; i < N; ++i) {
    int hi = HexValue(hex[2 * i]);
    int lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    (*out)[i] = static_cast<uint8_t>((hi << 4) | lo);
  }
  return true;
}

// Word by word: ids are checked several times per span, and the background span's (all zero)
// would otherwise be scanned byte by byte.
template <size_t N>
bool NonZero(const std::array<uint8_t, N>& bytes) {
  static_assert(N % 8 == 0);
  uint64_t any = 0;
  for (size_t i = 0; i < N; i += 8) {
    uint64_t word;
    std::memcpy(&word, bytes.data() + i, 8);
    any |= word;
  }
  return any != 0;
}

}  // namespace

bool TraceId::IsValid() const { return NonZero(bytes); }
std::string TraceId::ToHex() const { return ToHexImpl(bytes); }
std::optional<TraceId> TraceId::FromHex(std::string_view hex) {
  TraceId id;
  if (!FromHexImpl(hex, &id.bytes)) return std::nullopt;
  return id;
}

bool SpanId::IsValid() const { return NonZero(bytes); }
std::string SpanId::ToHex() const { return ToHexImpl(bytes); }
std::optional<SpanId> SpanId::FromHex(std::string_view hex) {
  SpanId id;
  if (!FromHexImpl(hex, &id.bytes)) return std::nullopt;
  return id;
}

bool SpanContext::IsValid() const { return trace_id.IsValid() && span_id.IsValid(); }

bool SpanContext::operator==(const SpanContext& o) const {
  return trace_id == o.trace_id && span_id == o.span_id && trace_flags == o.trace_flags &&
         remote == o.remote;
}

}  // namespace kf::trace
