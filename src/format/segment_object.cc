#include "format/segment_object.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/absl_compat.h"
#include "common/coding.h"
#include "common/errors.h"
#include "format/record_batch.h"

namespace kf::format {

std::string SegmentObjectKey(std::string_view prefix, std::string_view log, uint64_t segment) {
  return absl::StrCat(ToAbsl(prefix), "/", ToAbsl(log), "/", absl::StrFormat("%020d", segment),
                      ".seg");
}

std::string BeginSegmentObject(uint64_t end) {
  std::string out;
  PutFixed32(&out, kSegmentObjectMagic);
  out.push_back(static_cast<char>(kSegmentObjectVersion));
  out.append(3, '\0');
  PutFixed64(&out, end);
  return out;
}

void AppendSegmentBatch(std::string* object, uint64_t base,
                        const std::vector<std::string>& entries) {
  BatchBuilder batch;
  batch.Begin(object, base);
  for (const auto& e : entries) batch.Add(e);
  batch.Finish();
}

absl::StatusOr<std::vector<std::string>> ParseSegmentObject(std::string_view object) {
  auto bad = [](std::string_view why) {
    return StreamingError(StreamingCode::kDataLoss, absl::StrCat("segment object: ", ToAbsl(why)));
  };
  if (object.size() < kSegmentObjectHeaderSize ||
      DecodeFixed32(object.data()) != kSegmentObjectMagic ||
      static_cast<uint8_t>(object[4]) != kSegmentObjectVersion) {
    return bad("bad header");
  }
  const uint64_t end = DecodeFixed64(object.data() + 8);
  std::vector<std::string> out;
  std::string_view rest = object.substr(kSegmentObjectHeaderSize);
  while (!rest.empty()) {
    BatchHeader h;
    if (rest.size() < kBatchHeaderSize || !ParseBatchHeader(rest.data(), &h) ||
        rest.size() < h.total_size() ||
        !VerifyBatch(rest.data(), h, rest.data() + kBatchHeaderSize)) {
      return bad("corrupt batch");
    }
    if (h.base_offset != out.size()) return bad("batches are not contiguous");
    absl::Status s = ForEachEntry(h, rest.substr(kBatchHeaderSize, h.payload_len),
                                  [&](uint64_t, std::string_view data) { out.emplace_back(data); });
    if (!s.ok()) return s;
    rest.remove_prefix(h.total_size());
  }
  if (out.size() != end) return bad(absl::StrCat("holds ", out.size(), " entries, not ", end));
  return out;
}

}  // namespace kf::format
