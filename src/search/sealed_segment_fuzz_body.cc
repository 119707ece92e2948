#include "search/sealed_segment_fuzz_body.h"

#include <cstdio>
#include <cstdlib>

#include "common/coding.h"
#include "common/crc32c.h"
#include "common/errors.h"
#include "search/delete_log_format.h"
#include "search/sealed_segment_format.h"

namespace kf::search {
namespace {

void Check(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "sealed_segment_fuzz invariant violated: %s\n", what);
  std::abort();
}

void DecodeAndCheck(const std::string& bytes) {
  auto decoded = DecodeSealedSegment(bytes, "fuzz", nullptr);
  if (!decoded.ok()) {
    Check(GetStreamingCode(decoded.status()) == StreamingCode::kDataLoss, "refused as DATA_LOSS");
    return;
  }
  auto encoded = EncodeSealedSegment(decoded->meta, decoded->snapshot());
  Check(encoded.ok(), "a decoded segment encodes");
  Check(*encoded == bytes, "a decoded segment encodes to the bytes it came from");
}

void DecodeDeleteLogAndCheck(const std::string& bytes) {
  auto decoded = DecodeDeleteLog(bytes, "fuzz");
  if (!decoded.ok()) {
    Check(GetStreamingCode(decoded.status()) == StreamingCode::kDataLoss, "refused as DATA_LOSS");
    return;
  }
  auto encoded = EncodeDeleteLog(decoded->segment_id, decoded->records);
  Check(encoded.ok() && *encoded == bytes, "a decoded delete log encodes to its bytes");
}

void SetCrc(std::string* s, size_t body, size_t len) {
  EncodeFixed32(s->data() + body + len,
                crc32c::Mask(crc32c::Value(std::string_view(*s).substr(body, len))));
}

}  // namespace

std::string WithMatchingChecksums(std::string_view data) {
  std::string s(data);
  constexpr size_t kPrefix = 16;  // magic, version, flags, body length
  if (s.size() < kPrefix) return s;
  const uint64_t header = DecodeFixed32(s.data() + 12);
  if (header > s.size() - kPrefix || s.size() - kPrefix - header < 4) return s;
  SetCrc(&s, kPrefix, header);
  // Each part is padded with zeros to a multiple of 8 from the start.
  const auto padded = [](size_t at) { return (at + 7) / 8 * 8; };
  for (size_t at = padded(kPrefix + header + 4); at <= s.size() && s.size() - at >= 8;) {
    const uint64_t len = DecodeFixed64(s.data() + at);
    if (len > s.size() - at - 8 || s.size() - at - 8 - len < 4) break;
    SetCrc(&s, at + 8, len);
    at = padded(at + 8 + len + 4);
  }
  return s;
}

void RunSealedSegmentFuzzInput(std::string_view data) {
  DecodeAndCheck(std::string(data));
  DecodeAndCheck(WithMatchingChecksums(data));
  DecodeDeleteLogAndCheck(std::string(data));
  if (data.size() >= 4) {  // the delete log's one CRC, over everything before it
    std::string fixed(data);
    SetCrc(&fixed, 0, fixed.size() - 4);
    DecodeDeleteLogAndCheck(fixed);
  }
}

}  // namespace kf::search
