#include "common/text_codec.h"

#include <array>
#include <cstring>

namespace kf {
namespace {
constexpr char kB64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr std::array<int8_t, 256> MakeB64Rev() {
  std::array<int8_t, 256> r{};
  for (auto& x : r) x = -1;
  for (int i = 0; i < 64; ++i) r[static_cast<unsigned char>(kB64[i])] = static_cast<int8_t>(i);
  return r;
}
constexpr auto kB64Rev = MakeB64Rev();
}  // namespace

size_t Base64EncodeTo(std::string_view in, char* out) {
  char* o = out;
  size_t i = 0;
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  for (; i + 3 <= in.size(); i += 3) {
    uint32_t v = (p[i] << 16) | (p[i + 1] << 8) | p[i + 2];
    o[0] = kB64[v >> 18];
    o[1] = kB64[(v >> 12) & 63];
    o[2] = kB64[(v >> 6) & 63];
    o[3] = kB64[v & 63];
    o += 4;
  }
  size_t rest = in.size() - i;
  if (rest == 1) {
    uint32_t v = p[i] << 16;
    o[0] = kB64[v >> 18];
    o[1] = kB64[(v >> 12) & 63];
    o[2] = '=';
    o[3] = '=';
    o += 4;
  } else if (rest == 2) {
    uint32_t v = (p[i] << 16) | (p[i + 1] << 8);
    o[0] = kB64[v >> 18];
    o[1] = kB64[(v >> 12) & 63];
    o[2] = kB64[(v >> 6) & 63];
    o[3] = '=';
    o += 4;
  }
  return static_cast<size_t>(o - out);
}

std::string Base64Encode(std::string_view in) {
  std::string out(Base64EncodedSize(in.size()), '\0');
  out.resize(Base64EncodeTo(in, out.data()));
  return out;
}

std::optional<size_t> Base64DecodeTo(std::string_view in, char* out) {
  if (in.size() % 4 != 0) return std::nullopt;
  size_t n = 0;
  for (size_t i = 0; i < in.size(); i += 4) {
    int v[4];
    int pad = 0;
    for (int k = 0; k < 4; ++k) {
      char c = in[i + k];
      if (c == '=') {
        // Padding only in the last quantum, only in its last two places, and contiguous.
        if (i + 4 != in.size() || k < 2) return std::nullopt;
        ++pad;
        v[k] = 0;
      } else {
        if (pad) return std::nullopt;
        v[k] = kB64Rev[static_cast<unsigned char>(c)];
        if (v[k] < 0) return std::nullopt;
      }
    }
    uint32_t w = (v[0] << 18) | (v[1] << 12) | (v[2] << 6) | v[3];
    out[n++] = static_cast<char>(w >> 16);
    if (pad < 2) out[n++] = static_cast<char>((w >> 8) & 0xff);
    if (pad < 1) out[n++] = static_cast<char>(w & 0xff);
    // Canonical form: the bits dropped by padding must be zero.
    if ((pad == 1 && (w & 0xff)) || (pad == 2 && (w & 0xffff))) return std::nullopt;
  }
  return n;
}

std::optional<std::string> Base64Decode(std::string_view in) {
  std::string out(Base64DecodedCapacity(in.size()), '\0');
  auto n = Base64DecodeTo(in, out.data());
  if (!n) return std::nullopt;
  out.resize(*n);
  return out;
}

size_t Base36EncodeTo(uint64_t v, char* out) {
  // Digits are produced least significant first into the tail of a scratch buffer.
  char buf[kMaxBase36Chars];
  size_t n = kMaxBase36Chars;
  do {
    const auto d = static_cast<int>(v % 36);
    buf[--n] = static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10);
    v /= 36;
  } while (v != 0);
  const size_t len = kMaxBase36Chars - n;
  std::memcpy(out, buf + n, len);
  return len;
}

std::string Base36Encode(uint64_t v) {
  char buf[kMaxBase36Chars];
  return std::string(buf, Base36EncodeTo(v, buf));
}

std::optional<uint64_t> Base36Decode(std::string_view s) {
  if (s.empty() || s.size() > 13 || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  unsigned __int128 v = 0;
  for (char c : s) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'z') {
      d = c - 'a' + 10;
    } else {
      return std::nullopt;
    }
    v = v * 36 + d;
  }
  if (v > UINT64_MAX) return std::nullopt;
  return static_cast<uint64_t>(v);
}

}  // namespace kf
