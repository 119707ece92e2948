// Reading record batches out of one segment file: a buffered sequential BatchReader (used by
// scanners and recovery) and ScanSegment, the recovery scan that finds a segment's valid end
// and tells a torn tail from real damage.
//
// Thread-safety: BatchReader is not thread-safe (one per scanner); ScanSegment is a pure
// function of the file. Ownership: both borrow the file for the duration of the call/object.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "format/record_batch.h"
#include "storage/fs/file_system.h"

namespace kf::wal::local {

// A sparse index point: the batch holding entry `offset` starts at byte `pos`.
struct IndexPoint {
  uint64_t offset = 0;
  uint64_t pos = 0;
};
// Index points are kept only every kIndexInterval bytes: reading from an id then costs at most
// that much extra sequential reading, and the index of a 64 MiB segment stays ~1k points.
inline constexpr uint64_t kIndexInterval = 64 * 1024;

class BatchReader {
 public:
  enum class Result {
    kOk,          // *header and *payload describe a batch whose crc matched
    kIncomplete,  // the header or payload extends past `limit` (torn or still being written)
    kCorrupt,     // bad magic, version or crc
  };

  BatchReader(const fs::RandomAccessFile* file, std::string path);

  // Reads the batch starting at `pos`; REQUIRES pos < limit. `payload` stays valid until the
  // next call.
  absl::StatusOr<Result> Read(uint64_t pos, uint64_t limit, format::BatchHeader* header,
                              std::string_view* payload);

  const std::string& path() const { return path_; }

 private:
  // Makes [pos, pos+n) available in buf_; false if the file ends (or `limit` is) before.
  absl::StatusOr<bool> Fill(uint64_t pos, uint64_t n, uint64_t limit);

  const fs::RandomAccessFile* file_;
  const std::string path_;
  std::string buf_;
  uint64_t buf_pos_ = 0;  // file position of buf_[0]
};

struct ScanResult {
  uint64_t valid_end = 0;   // bytes of valid batches from the start of the scan
  uint64_t end_offset = 0;  // entry offset after the last valid batch
  // Something other than valid batches lay between valid_end and the limit: a torn batch, or
  // the zeros of a preallocated segment's unwritten rest.
  bool torn = false;
  std::vector<IndexPoint> index;
};

// Validates every batch of `file` in [0, limit), which must start at entry `base`. An invalid
// batch with no valid batch after it is a torn tail (result.torn); an invalid batch followed
// by a valid one, a batch whose base offset does not continue the previous one, or entry
// lengths that do not add up are DATA_LOSS with the path and byte position in the message.
// (A valid batch after an invalid one proves damage because the writer syncs every batch
// before it writes the next.)
absl::StatusOr<ScanResult> ScanSegment(const fs::RandomAccessFile* file, const std::string& path,
                                       uint64_t limit, uint64_t base);

// Index points of [from_pos, limit) found by hopping over batch headers (no payload reads, no
// crc checks: good enough to seek, reads verify). Stops at the first unreadable header.
// `*end_pos` / `*end_offset` receive where the hops stopped; `*offset` enters as the entry
// offset at from_pos.
absl::Status HopIndex(const fs::RandomAccessFile* file, const std::string& path, uint64_t from_pos,
                      uint64_t limit, uint64_t* offset, uint64_t* end_pos,
                      std::vector<IndexPoint>* index);

// Appends `point` to `index` if it is kIndexInterval past the previous point (or the first).
inline void MaybeAddIndexPoint(std::vector<IndexPoint>* index, IndexPoint point) {
  if (index->empty() || point.pos >= index->back().pos + kIndexInterval) index->push_back(point);
}

}  // namespace kf::wal::local
