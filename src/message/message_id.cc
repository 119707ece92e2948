#include "message/message_id.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/coding.h"

// The public MessageId (include/kingfisher/types.h) is implemented here, with the message model.

namespace kingfisher {
namespace {
absl::string_view KindPrefix(WalKind kind) {
  switch (kind) {
    case WalKind::kLocal:
      return "local";
    case WalKind::kObjectStore:
      return "os";
    case WalKind::kQuorum:
      return "q";
    default:
      return "";
  }
}
}  // namespace

std::string MessageId::Encode() const {
  std::string out;
  out.push_back(static_cast<char>(kind_));
  kf::PutVarint64(&out, segment_);
  kf::PutVarint64(&out, entry_);
  return out;
}

absl::StatusOr<MessageId> MessageId::Decode(std::string_view bytes) {
  if (bytes.empty()) return absl::InvalidArgumentError("message id: empty");
  auto kind = static_cast<WalKind>(static_cast<uint8_t>(bytes[0]));
  if (KindPrefix(kind).empty()) return absl::InvalidArgumentError("message id: unknown kind");
  bytes.remove_prefix(1);
  uint64_t seg = 0, entry = 0;
  if (!kf::GetVarint64(&bytes, &seg) || !kf::GetVarint64(&bytes, &entry) || !bytes.empty()) {
    return absl::InvalidArgumentError("message id: malformed bytes");
  }
  if (kind == WalKind::kLocal && seg != 0) {
    return absl::InvalidArgumentError("message id: local ids have no segment");
  }
  return MessageId(kind, seg, entry);
}

std::string MessageId::ToText() const {
  if (!valid()) return "invalid";
  if (kind_ == WalKind::kLocal) return absl::StrCat(KindPrefix(kind_), ":", entry_);
  return absl::StrCat(KindPrefix(kind_), ":", segment_, ".", entry_);
}

absl::StatusOr<MessageId> MessageId::FromText(std::string_view text) {
  auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat("malformed message id '", kf::ToAbsl(text),
                                                   "' (expected e.g. local:42, os:3.17, q:3.17)"));
  };
  size_t colon = text.find(':');
  if (colon == std::string_view::npos) return bad();
  std::string_view prefix = text.substr(0, colon), rest = text.substr(colon + 1);
  // Only canonical decimal (no sign, no leading zeros) so text round-trips exactly.
  auto parse = [](std::string_view s, uint64_t* v) {
    if (s.empty() || (s.size() > 1 && s[0] == '0')) return false;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    return absl::SimpleAtoi(kf::ToAbsl(s), v);
  };
  uint64_t seg = 0, entry = 0;
  if (prefix == "local") {
    if (!parse(rest, &entry)) return bad();
    return MessageId::Local(entry);
  }
  WalKind kind;
  if (prefix == "os") {
    kind = WalKind::kObjectStore;
  } else if (prefix == "q") {
    kind = WalKind::kQuorum;
  } else {
    return bad();
  }
  size_t dot = rest.find('.');
  if (dot == std::string_view::npos || !parse(rest.substr(0, dot), &seg) ||
      !parse(rest.substr(dot + 1), &entry)) {
    return bad();
  }
  return MessageId(kind, seg, entry);
}

}  // namespace kingfisher
