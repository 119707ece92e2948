#include "message/vchannel_name.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "message/payload.h"

namespace kf {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The length of the pchannel prefix (greedy `^(.+-dml_\d+)_.+`: the last "-dml_" not at
// position 0 followed by digits, '_' and a non-empty suffix); nullopt when there is none.
std::optional<size_t> PChannelLength(std::string_view vchannel) {
  constexpr std::string_view kMarker = "-dml_";
  size_t pos = vchannel.size();
  while (pos > 0) {
    pos = vchannel.rfind(kMarker, pos - 1);
    if (pos == std::string_view::npos || pos == 0) break;
    size_t end = pos + kMarker.size();
    const size_t digits = end;
    while (end < vchannel.size() && IsDigit(vchannel[end])) ++end;
    if (end > digits && end + 1 < vchannel.size() && vchannel[end] == '_') return end;
  }
  return std::nullopt;
}

absl::Status Malformed(std::string_view vchannel) {
  return StreamingError(StreamingCode::kInvalidArgument,
                        absl::StrCat("malformed vchannel '", ToAbsl(vchannel),
                                     "': want '<cluster>-dml_<i>_<suffix>', e.g. "
                                     "'kf-dml_0_orders' or 'kf-dml_0_42v0'"));
}

// A canonical decimal (no leading zero) of at most `max`; nullopt otherwise.
std::optional<uint64_t> Canonical(std::string_view s, uint64_t max) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (max - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsDigit(c)) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> PChannelOfVChannel(std::string_view vchannel) {
  auto len = PChannelLength(vchannel);
  if (!len) return Malformed(vchannel);
  return std::string(vchannel.substr(0, *len));
}

absl::StatusOr<std::optional<CollectionVChannel>> ParseVChannel(std::string_view vchannel) {
  auto len = PChannelLength(vchannel);
  if (!len) return Malformed(vchannel);
  const std::string_view suffix = vchannel.substr(*len + 1);
  const size_t v = suffix.find('v');
  if (v == std::string_view::npos) return std::nullopt;
  const std::string_view id_text = suffix.substr(0, v), shard_text = suffix.substr(v + 1);
  if (!AllDigits(id_text) || !AllDigits(shard_text)) return std::nullopt;  // raw
  auto id = Canonical(id_text, std::numeric_limits<int64_t>::max());
  auto shard = Canonical(shard_text, kMaxShards - 1);
  if (!id || *id == 0 || !shard) {
    return StreamingError(
        StreamingCode::kInvalidArgument,
        absl::StrCat("malformed collection vchannel '", ToAbsl(vchannel),
                     "': want '<pchannel>_<collectionID>v<shard>' in canonical decimal with "
                     "collectionID >= 1 and shard < ",
                     kMaxShards));
  }
  return CollectionVChannel{.collection_id = static_cast<int64_t>(*id),
                            .shard = static_cast<uint32_t>(*shard)};
}

bool IsCollectionVChannel(std::string_view vchannel) {
  auto parsed = ParseVChannel(vchannel);
  return parsed.ok() && parsed->has_value();
}

}  // namespace kf
