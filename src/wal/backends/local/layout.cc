#include "wal/backends/local/layout.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/errors.h"

namespace kf::wal::local {
namespace {

constexpr uint32_t kSealMagic = 0x4c53464b;  // "KFSL"
constexpr uint8_t kSealVersion = 1;
constexpr size_t kSealSize = 4 + 1 + 3 + 4 + 8 + 8 + 8 + 8;

bool ParseDigits(std::string_view s, uint64_t* v) {
  if (s.size() != 20) return false;
  uint64_t out = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    uint64_t next = out * 10 + static_cast<uint64_t>(c - '0');
    if (next / 10 != out) return false;  // overflow
    out = next;
  }
  *v = out;
  return true;
}

std::string Digits(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%020llu", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string SegmentFileName(uint64_t base, Term term) {
  return absl::StrCat(Digits(base), "-", Digits(static_cast<uint64_t>(term.value())), ".log");
}

bool ParseSegmentFileName(std::string_view name, uint64_t* base, Term* term) {
  // 20 digits, '-', 20 digits, ".log"
  if (name.size() != 45 || name[20] != '-' || name.substr(41) != ".log") return false;
  uint64_t t = 0;
  if (!ParseDigits(name.substr(0, 20), base) || !ParseDigits(name.substr(21, 20), &t)) {
    return false;
  }
  if (t > static_cast<uint64_t>(INT64_MAX)) return false;
  *term = Term(static_cast<int64_t>(t));
  return true;
}

std::string TermFileName(Term term) { return Digits(static_cast<uint64_t>(term.value())); }

bool ParseTermFileName(std::string_view name, Term* term) {
  uint64_t t = 0;
  if (!ParseDigits(name, &t) || t > static_cast<uint64_t>(INT64_MAX)) return false;
  *term = Term(static_cast<int64_t>(t));
  return true;
}

std::string EncodeSealRecord(const SealRecord& seal) {
  std::string out;
  PutFixed32(&out, kSealMagic);
  out.push_back(static_cast<char>(kSealVersion));
  out.append(3, '\0');
  PutFixed32(&out, 0);  // crc placeholder
  PutFixed64(&out, static_cast<uint64_t>(seal.sealed_term.value()));
  PutFixed64(&out, seal.segment_base);
  PutFixed64(&out, seal.length);
  PutFixed64(&out, seal.end_offset);
  uint32_t crc = crc32c::Mask(crc32c::Value(out.data() + 12, out.size() - 12));
  EncodeFixed32(out.data() + 8, crc);
  return out;
}

absl::StatusOr<SealRecord> DecodeSealRecord(std::string_view b, std::string_view path) {
  auto bad = [&](std::string_view why) {
    return StreamingError(
        StreamingCode::kDataLoss,
        absl::StrCat("bad seal record ", std::string(path), ": ", std::string(why)));
  };
  if (b.size() != kSealSize) return bad("wrong size");
  if (DecodeFixed32(b.data()) != kSealMagic) return bad("bad magic");
  if (static_cast<uint8_t>(b[4]) != kSealVersion) return bad("unknown version");
  // The reserved bytes sit outside the checksum: non-zero means damage, as in batch headers.
  if (b[5] != 0 || b[6] != 0 || b[7] != 0) return bad("non-zero reserved bytes");
  if (crc32c::Unmask(DecodeFixed32(b.data() + 8)) != crc32c::Value(b.data() + 12, b.size() - 12)) {
    return bad("checksum mismatch");
  }
  SealRecord s;
  s.sealed_term = Term(static_cast<int64_t>(DecodeFixed64(b.data() + 12)));
  s.segment_base = DecodeFixed64(b.data() + 20);
  s.length = DecodeFixed64(b.data() + 28);
  s.end_offset = DecodeFixed64(b.data() + 36);
  return s;
}

}  // namespace kf::wal::local
