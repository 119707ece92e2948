// The object a logstore uploads for a sealed segment (docs/quorum-wal.md, "Objects"):
//
//   magic u32 "KFQS" | version u8 | reserved 3 bytes | end u64 | batches
//
// `batches` are the local backend's CRC'd record batches (format/record_batch.h,
// base offset = entry id) holding exactly entries [0, end). Little-endian. Pure functions;
// thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kf::format {

inline constexpr uint32_t kSegmentObjectMagic = 0x5351464b;  // "KFQS" in file order
inline constexpr uint8_t kSegmentObjectVersion = 1;
inline constexpr size_t kSegmentObjectHeaderSize = 16;

// Object key of a segment: "<prefix>/<log>/<segment, 20 digits>.seg".
std::string SegmentObjectKey(std::string_view prefix, std::string_view log, uint64_t segment);

// Builds the header; append batches after it with AppendSegmentBatch.
std::string BeginSegmentObject(uint64_t end);
// Appends one batch of `entries` with ids from `base`.
void AppendSegmentBatch(std::string* object, uint64_t base,
                        const std::vector<std::string>& entries);

// Every entry of a segment object, in order. DATA_LOSS on a bad header, a CRC mismatch or
// entries that do not cover [0, end) exactly.
absl::StatusOr<std::vector<std::string>> ParseSegmentObject(std::string_view object);

}  // namespace kf::format
