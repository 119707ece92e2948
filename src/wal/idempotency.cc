#include "wal/idempotency.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"

namespace kf::wal {

absl::StatusOr<IdempotencyKey> ParseIdempotencyKey(std::string_view text) {
  size_t colon = text.rfind(':');
  auto bad = [&] {
    return StreamingError(StreamingCode::kInvalidArgument,
                          absl::StrCat("malformed idempotency key '", ToAbsl(text),
                                       "' (expected <producer-id>:<sequence>)"));
  };
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == text.size()) return bad();
  std::string_view seq = text.substr(colon + 1);
  if (seq.size() > 1 && seq[0] == '0') return bad();
  IdempotencyKey key;
  for (char c : seq) {  // one pass: this runs for every append
    if (c < '0' || c > '9') return bad();
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (key.sequence > (UINT64_MAX - digit) / 10) return bad();  // overflow
    key.sequence = key.sequence * 10 + digit;
  }
  key.producer = std::string(text.substr(0, colon));
  return key;
}

}  // namespace kf::wal
