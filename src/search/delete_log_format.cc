#include "search/delete_log_format.h"

#include <bit>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/coding.h"
#include "common/crc32c.h"
#include "common/errors.h"

namespace kf::search {
namespace {

static_assert(std::endian::native == std::endian::little);

constexpr char kMagic[] = "KFSDEL01";  // 8 bytes, no terminator on disk
constexpr size_t kMagicSize = 8;
// magic, version u16, flags u16, count u32, segment_id i64
constexpr size_t kHeaderSize = kMagicSize + 2 + 2 + 4 + 8;
constexpr size_t kRecordSize = 16;  // pk i64, ts u64

bool NonDecreasing(std::span<const DeleteRecord> records) {
  for (size_t i = 1; i < records.size(); ++i) {
    if (records[i].ts < records[i - 1].ts) return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<std::string> EncodeDeleteLog(int64_t segment_id,
                                            std::span<const DeleteRecord> records) {
  if (records.size() > UINT32_MAX || !NonDecreasing(records)) {
    return absl::InvalidArgumentError(absl::StrCat("delete log of segment ", segment_id, ": ",
                                                   records.size(),
                                                   " records, timestamps must not decrease"));
  }
  std::string out;
  out.reserve(kHeaderSize + records.size() * kRecordSize + 4);
  out.append(kMagic, kMagicSize);
  PutFixed16(&out, kDeleteLogVersion);
  PutFixed16(&out, 0);  // flags
  PutFixed32(&out, static_cast<uint32_t>(records.size()));
  PutFixed64(&out, static_cast<uint64_t>(segment_id));
  for (const DeleteRecord& r : records) {
    PutFixed64(&out, static_cast<uint64_t>(r.pk));
    PutFixed64(&out, r.ts);
  }
  PutFixed32(&out, crc32c::Mask(crc32c::Value(out)));
  return out;
}

absl::StatusOr<DeleteLog> DecodeDeleteLog(std::string_view bytes, std::string_view object) {
  auto corrupt = [&](std::string_view what) {
    return StreamingError(StreamingCode::kDataLoss,
                          absl::StrCat("delete log object ", ToAbsl(object), ": ", ToAbsl(what)));
  };
  if (bytes.size() < kHeaderSize + 4) return corrupt("truncated header");
  if (bytes.substr(0, kMagicSize) != std::string_view(kMagic, kMagicSize)) {
    return corrupt("not a delete log (bad magic)");
  }
  const uint16_t version = DecodeFixed16(bytes.data() + 8);
  const uint16_t flags = DecodeFixed16(bytes.data() + 10);
  const uint32_t count = DecodeFixed32(bytes.data() + 12);
  if (version != kDeleteLogVersion) {
    return corrupt(
        absl::StrCat("format version ", version, " (this build reads ", kDeleteLogVersion, ")"));
  }
  if (flags != 0) return corrupt(absl::StrCat("unknown flags ", flags));
  if ((bytes.size() - kHeaderSize - 4) / kRecordSize != count ||
      (bytes.size() - kHeaderSize - 4) % kRecordSize != 0) {
    return corrupt(absl::StrCat(bytes.size(), " bytes do not hold ", count, " records"));
  }
  const size_t body = bytes.size() - 4;
  if (crc32c::Unmask(DecodeFixed32(bytes.data() + body)) != crc32c::Value(bytes.substr(0, body))) {
    return corrupt("checksum mismatch");
  }
  DeleteLog out;
  out.segment_id = static_cast<int64_t>(DecodeFixed64(bytes.data() + 16));
  out.records.resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    const char* p = bytes.data() + kHeaderSize + size_t{i} * kRecordSize;
    out.records[i] = {static_cast<int64_t>(DecodeFixed64(p)), DecodeFixed64(p + 8)};
  }
  if (!NonDecreasing(out.records)) return corrupt("timestamps decrease");
  return out;
}

}  // namespace kf::search
