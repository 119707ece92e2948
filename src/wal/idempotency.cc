#include "wal/idempotency.h"

#include "absl/strings/numbers.h"
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
  for (char c : seq) {
    if (c < '0' || c > '9') return bad();
  }
  IdempotencyKey key;
  if (!absl::SimpleAtoi(ToAbsl(seq), &key.sequence)) return bad();
  key.producer = std::string(text.substr(0, colon));
  return key;
}

}  // namespace kf::wal
