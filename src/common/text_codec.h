// Text encodings used by message properties (docs/semantics.md §2): standard padded base64 for
// binary headers and base-36 for timeticks and terms. Decoders are strict: they reject anything a
// matching encoder would not have produced.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kf {

std::string Base64Encode(std::string_view bytes);
// Base64EncodedSize(n) = the length of Base64Encode of n bytes.
constexpr size_t Base64EncodedSize(size_t n) { return (n + 2) / 3 * 4; }
// Writes Base64Encode(bytes) to `out` (at least Base64EncodedSize(bytes.size()) chars, no
// terminator) and returns its length. For hot paths that must not allocate.
size_t Base64EncodeTo(std::string_view bytes, char* out);
// Standard alphabet, '=' padding required, no whitespace.
std::optional<std::string> Base64Decode(std::string_view text);
// Room Base64DecodeTo needs for `text_size` characters (at least the decoded length).
constexpr size_t Base64DecodedCapacity(size_t text_size) { return text_size / 4 * 3; }
// Base64Decode into `out` (at least Base64DecodedCapacity(text.size()) chars); returns the
// decoded length. For hot paths that must not allocate.
std::optional<size_t> Base64DecodeTo(std::string_view text, char* out);

// Lower-case base-36, no leading zeros ("0" for zero).
std::string Base36Encode(uint64_t v);
// The longest Base36Encode (UINT64_MAX = "3w5e11264sgsf").
inline constexpr size_t kMaxBase36Chars = 13;
// Writes Base36Encode(v) to `out` (at least kMaxBase36Chars chars, no terminator) and returns
// its length. For hot paths that must not allocate.
size_t Base36EncodeTo(uint64_t v, char* out);
// Accepts lower-case digits only; rejects empty, leading zeros and overflow.
std::optional<uint64_t> Base36Decode(std::string_view text);

}  // namespace kf
