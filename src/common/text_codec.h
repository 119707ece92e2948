// Text encodings used by message properties (SPEC §2): standard padded base64 for binary
// headers and base-36 for timeticks and terms. Decoders are strict: they reject anything a
// matching encoder would not have produced.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kf {

std::string Base64Encode(std::string_view bytes);
// Standard alphabet, '=' padding required, no whitespace.
std::optional<std::string> Base64Decode(std::string_view text);

// Lower-case base-36, no leading zeros ("0" for zero).
std::string Base36Encode(uint64_t v);
// Accepts lower-case digits only; rejects empty, leading zeros and overflow.
std::optional<uint64_t> Base36Decode(std::string_view text);

}  // namespace kf
