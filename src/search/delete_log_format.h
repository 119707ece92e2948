// The delete log object (docs/sealed-segment-format.md, "Delete logs"): the deletes that hit a
// sealed segment after it was sealed, as (pk, timestamp) records in the order they were applied
// (timestamps non-decreasing), one CRC32C over the whole object. Loading a sealed segment
// applies its delete logs in order (GrowingSegment::Delete).
//
// Decoding is for untrusted bytes: any mismatch is DATA_LOSS naming the object.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kf::search {

inline constexpr uint16_t kDeleteLogVersion = 1;

struct DeleteRecord {
  int64_t pk = 0;
  uint64_t ts = 0;
  friend bool operator==(const DeleteRecord&, const DeleteRecord&) = default;
};

struct DeleteLog {
  int64_t segment_id = 0;
  std::vector<DeleteRecord> records;  // timestamps non-decreasing
};

// INVALID_ARGUMENT when the records' timestamps decrease or there are 2^32 or more.
absl::StatusOr<std::string> EncodeDeleteLog(int64_t segment_id,
                                            std::span<const DeleteRecord> records);
absl::StatusOr<DeleteLog> DecodeDeleteLog(std::string_view bytes, std::string_view object);

}  // namespace kf::search
