// The sealed segment object (docs/sealed-segment-format.md, byte by byte): a growing segment's
// rows frozen into one immutable object — per chunk its pks, insert and delete timestamps,
// vectors and, when built, its IVF index (centroids and lists; the vectors then in list order),
// every column aligned, so that loading trains nothing and copies nothing: a decoded chunk
// searches the object's bytes in place. Every part is length-checked and CRC32C-checked; a
// version field lets a later format be told apart.
//
// Decoding is for untrusted bytes (an object store may return anything): every count, length,
// offset and list entry is checked before use, and any mismatch is DATA_LOSS naming the object
// and what was wrong; nothing is allocated from a length that was not first checked against the
// bytes present. Fuzzed by sealed_segment_fuzz.
//
// Thread-safety: pure functions. Errors: DATA_LOSS (corrupt, truncated, unknown version or
// metric) and INVALID_ARGUMENT (Encode: rows beyond the snapshot, a meta the format cannot hold).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/shared_bytes.h"
#include "search/growing_segment.h"
#include "search/ivf_index.h"
#include "search/metric.h"

namespace kf::search {

inline constexpr uint16_t kSealedSegmentVersion = 2;

// What the object says about itself (its header).
struct SealedSegmentMeta {
  int64_t collection_id = 0;
  int64_t segment_id = 0;
  std::string vchannel;   // the shard's
  std::string partition;  // "" = _default
  uint32_t dim = 0;
  Metric metric = Metric::kL2;
  uint32_t chunk_rows = 0;  // rows per chunk (the last one may hold fewer)
  uint64_t rows = 0;        // Encode fills it in
  uint64_t min_ts = 0;      // the oldest and newest insert timestamp of its rows
  uint64_t max_ts = 0;
};

// The object of `snapshot`'s rows (its chunks as they are: each full chunk's index if built).
// meta.dim, meta.metric and meta.chunk_rows must be the segment's.
absl::StatusOr<std::string> EncodeSealedSegment(SealedSegmentMeta meta,
                                                const SegmentSnapshot& snapshot);

struct DecodedSealedSegment {
  SealedSegmentMeta meta;
  // meta.rows rows in chunks of meta.chunk_rows (the last one possibly partial), each with its
  // index when the object had one; their bytes counted in the account given. Ready for
  // GrowingSegment::FromChunks.
  std::vector<std::shared_ptr<Chunk>> chunks;

  SegmentSnapshot snapshot() const {
    return {
        .chunks = {chunks.begin(), chunks.end()}, .rows = meta.rows, .chunk_rows = meta.chunk_rows};
  }
};

// Decodes and checks an object; `object` names it in errors. The chunks' indexes search with
// `index_options` (their default nprobe). The chunks' columns and indexes are views into
// `bytes`, which they keep alive: loading copies nothing but the delete column (bytes at an
// address not aligned to 8 are copied once first).
absl::StatusOr<DecodedSealedSegment> DecodeSealedSegment(SharedBytes bytes, std::string_view object,
                                                         std::shared_ptr<MemoryAccount> account,
                                                         const IndexOptions& index_options = {});
// The same over a copy of `bytes`.
absl::StatusOr<DecodedSealedSegment> DecodeSealedSegment(std::string_view bytes,
                                                         std::string_view object,
                                                         std::shared_ptr<MemoryAccount> account,
                                                         const IndexOptions& index_options = {});

}  // namespace kf::search
