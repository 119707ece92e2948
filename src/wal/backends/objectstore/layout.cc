#include "wal/backends/objectstore/layout.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"

namespace kf::wal::objectstore {
namespace {

constexpr size_t kDigits = 20;

std::string Digits(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(v));
  return buf;
}

std::optional<uint64_t> ParseDigits(std::string_view s) {
  if (s.size() != kDigits) return std::nullopt;
  uint64_t out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const uint64_t next = out * 10 + static_cast<uint64_t>(c - '0');
    if (next / 10 != out) return std::nullopt;  // overflow
    out = next;
  }
  return out;
}

}  // namespace

Layout::Layout(std::string root, std::string meta_prefix, std::string pchannel)
    : pchannel_(std::move(pchannel)),
      log_prefix_(root.empty() ? absl::StrCat(pchannel_, "/")
                               : absl::StrCat(root, "/", pchannel_, "/")),
      meta_key_(absl::StrCat(meta_prefix, pchannel_)) {}

std::string Layout::SegmentPrefix(uint64_t segment) const {
  return absl::StrCat(log_prefix_, Digits(segment), "/");
}

std::string Layout::BlockKey(uint64_t segment, uint64_t block) const {
  return absl::StrCat(SegmentPrefix(segment), Digits(block));
}

std::string Layout::MergedKey(uint64_t segment, uint64_t first, uint64_t end) const {
  return absl::StrCat(SegmentPrefix(segment), "m", Digits(first), "-", Digits(end));
}

std::optional<uint64_t> Layout::BlockOfKey(uint64_t segment, std::string_view key) const {
  const std::string prefix = SegmentPrefix(segment);
  if (!key.starts_with(prefix)) return std::nullopt;
  return ParseDigits(key.substr(prefix.size()));
}

std::optional<uint64_t> Layout::SegmentOfKey(std::string_view key) const {
  if (!key.starts_with(log_prefix_)) return std::nullopt;
  key.remove_prefix(log_prefix_.size());
  return ParseDigits(key.substr(0, std::min(key.size(), key.find('/'))));
}

}  // namespace kf::wal::objectstore
