#include "format/record_batch.h"

#include <cstring>

#include "common/coding.h"
#include "common/crc32c.h"
#include "common/errors.h"

namespace kf::format {

void PutBatchHeader(char* h, uint64_t base_offset) {
  std::memset(h, 0, kBatchHeaderSize);  // flags, reserved; crc, length and count until sealed
  EncodeFixed32(h, kBatchMagic);
  h[4] = static_cast<char>(kBatchVersion);
  EncodeFixed64(h + 16, base_offset);
}

void SealBatch(char* batch, size_t size, uint32_t count) {
  EncodeFixed32(batch + 12, static_cast<uint32_t>(size - kBatchHeaderSize));
  EncodeFixed32(batch + 24, count);
  EncodeFixed32(batch + 8, crc32c::Mask(crc32c::Value(batch + 12, size - 12)));
}

void BatchBuilder::Begin(std::string* out, uint64_t base_offset) {
  out_ = out;
  start_ = out->size();
  count_ = 0;
  out->resize(start_ + kBatchHeaderSize);
  PutBatchHeader(out->data() + start_, base_offset);
}

void BatchBuilder::Add(std::string_view entry) {
  char len[4];
  EncodeFixed32(len, static_cast<uint32_t>(entry.size()));
  out_->append(len, 4);
  out_->append(entry.data(), entry.size());
  ++count_;
}

void BatchBuilder::Finish() { SealBatch(out_->data() + start_, out_->size() - start_, count_); }

bool ParseBatchHeader(const char* p, BatchHeader* header) {
  // Flags and reserved bytes sit before the crc field: version 1 defines none, so anything
  // but zero is damage.
  if (DecodeFixed32(p) != kBatchMagic || static_cast<uint8_t>(p[4]) != kBatchVersion || p[5] != 0 ||
      p[6] != 0 || p[7] != 0) {
    return false;
  }
  header->masked_crc = DecodeFixed32(p + 8);
  header->payload_len = DecodeFixed32(p + 12);
  header->base_offset = DecodeFixed64(p + 16);
  header->count = DecodeFixed32(p + 24);
  return true;
}

bool VerifyBatch(const char* header_bytes, const BatchHeader& header, const char* payload) {
  uint32_t crc = crc32c::Value(header_bytes + 12, kBatchHeaderSize - 12);
  crc = crc32c::Extend(crc, payload, header.payload_len);
  return crc32c::Unmask(header.masked_crc) == crc;
}

absl::Status ForEachEntry(const BatchHeader& header, std::string_view payload,
                          const std::function<void(uint64_t, std::string_view)>& fn) {
  uint64_t offset = header.base_offset;
  for (uint32_t i = 0; i < header.count; ++i) {
    if (payload.size() < kEntryOverhead) {
      return StreamingError(StreamingCode::kDataLoss, "batch entry lengths exceed the payload");
    }
    uint32_t len = DecodeFixed32(payload.data());
    payload.remove_prefix(kEntryOverhead);
    if (payload.size() < len) {
      return StreamingError(StreamingCode::kDataLoss, "batch entry lengths exceed the payload");
    }
    fn(offset++, payload.substr(0, len));
    payload.remove_prefix(len);
  }
  if (!payload.empty()) {
    return StreamingError(StreamingCode::kDataLoss, "batch payload has trailing bytes");
  }
  return absl::OkStatus();
}

}  // namespace kf::format
