#include "storage/object/object_store.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"

namespace kf::object {
namespace {

bool AllowedChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
         c == '_' || c == '.' || c == '-';
}

// Charset, length, no leading '/', no empty / "." / ".." segment. The last segment may be
// empty (a trailing '/') when `allow_trailing_slash`.
absl::Status CheckPath(std::string_view s, std::string_view what, bool allow_trailing_slash) {
  if (s.size() > kMaxKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(ToAbsl(what), " longer than ", kMaxKeyBytes, " bytes"));
  }
  for (char c : s) {
    if (!AllowedChar(c)) {
      return absl::InvalidArgumentError(absl::StrCat(ToAbsl(what),
                                                     " has a byte outside [A-Za-z0-9/_.-]: 0x",
                                                     absl::Hex(static_cast<unsigned char>(c))));
    }
  }
  size_t begin = 0;
  while (begin <= s.size()) {
    size_t end = s.find('/', begin);
    if (end == std::string_view::npos) end = s.size();
    const std::string_view segment = s.substr(begin, end - begin);
    const bool last = end == s.size();
    if (segment.empty() && !(last && allow_trailing_slash && begin > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat(ToAbsl(what), " has an empty segment: ", ToAbsl(s)));
    }
    if (segment.size() > kMaxSegmentBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(ToAbsl(what), " has a segment longer than ", kMaxSegmentBytes, " bytes"));
    }
    if (segment == "." || segment == "..") {
      return absl::InvalidArgumentError(
          absl::StrCat(ToAbsl(what), " has a '.' or '..' segment: ", ToAbsl(s)));
    }
    begin = end + 1;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SharedBytes> ObjectStore::GetShared(std::string_view key, absl::Time deadline,
                                                   Checksum /*checksum*/) {
  absl::StatusOr<std::string> bytes = Get(key, ByteRange::All(), deadline);
  if (!bytes.ok()) return bytes.status();
  return SharedBytes::Of(*std::move(bytes));
}

absl::Status ValidateKey(std::string_view key) {
  if (key.empty()) return absl::InvalidArgumentError("empty key");
  return CheckPath(key, "key", /*allow_trailing_slash=*/false);
}

absl::Status ValidatePrefix(std::string_view prefix) {
  if (prefix.empty()) return absl::OkStatus();
  return CheckPath(prefix, "prefix", /*allow_trailing_slash=*/true);
}

absl::Status ValidateRange(const ByteRange& range) {
  if (range.kind() != ByteRange::Kind::kAll && range.length() == 0) {
    return absl::InvalidArgumentError("empty byte range");
  }
  return absl::OkStatus();
}

absl::Status ValidateList(std::string_view prefix, std::string_view start_after, size_t limit) {
  if (limit == 0) return absl::InvalidArgumentError("list limit 0");
  if (absl::Status s = ValidatePrefix(prefix); !s.ok()) return s;
  return ValidatePrefix(start_after);
}

absl::Status ResolveRange(const ByteRange& range, uint64_t size, uint64_t* begin, uint64_t* end) {
  switch (range.kind()) {
    case ByteRange::Kind::kAll:
      *begin = 0;
      *end = size;
      return absl::OkStatus();
    case ByteRange::Kind::kSuffix:
      if (size == 0) return absl::OutOfRangeError("suffix range of an empty object");
      *begin = size - std::min(size, range.length());
      *end = size;
      return absl::OkStatus();
    case ByteRange::Kind::kSpan:
      if (range.offset() >= size) {
        return absl::OutOfRangeError(
            absl::StrCat("range starts at ", range.offset(), ", object has ", size, " bytes"));
      }
      *begin = range.offset();
      *end = size - *begin <= range.length() ? size : *begin + range.length();
      return absl::OkStatus();
  }
  return absl::InternalError("unknown range kind");
}

}  // namespace kf::object
