// SegmentStore: the disk of one logstore node (the quorum WAL backend's replica,
// docs/quorum-wal.md). It keeps, per (log, segment), an append-only file of CRC'd record batches
// (the local backend's batch format, base offset = entry id), a fence file holding the highest
// epoch a recovering writer fenced the segment at, and a seal file holding the sealed end.
//
// Durability: AddEntries returns only after the batch and everything before it were
// fdatasync'd (and the file's creation made durable in its directory); Fence and Seal write
// their file atomically (temp + fdatasync + rename + directory sync) before returning. Open()
// recovers every segment, cutting a torn tail (a batch that is short or fails its CRC) off.
// Writes to one segment are serialised; one writer sends each segment's batches one at a time,
// each carrying everything the writer queued meanwhile (group commit on the writer side).
// A write or sync error is sticky per segment: nothing more is written to that file.
//
// Thread-safety: thread-safe. Ownership: `fs` is borrowed and must outlive the store.
// Errors: ABORTED/CHANNEL_FENCED for an epoch below the segment's fence or a write to a sealed
// segment; OUT_OF_RANGE when first_entry is beyond the durable end (the message carries it);
// NOT_FOUND for a read of an unknown or deleted segment; INVALID_ARGUMENT for a bad log name;
// DATA_LOSS for corruption found by a read; INTERNAL for I/O errors.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "storage/fs/file_system.h"

namespace kf::logstore {

struct SegmentStoreOptions {
  std::string dir;               // <dir>/<log>/<segment>.{log,fence,seal,uploaded}
  fs::FileSystem* fs = nullptr;  // null = the POSIX file system
  uint64_t max_read_bytes = 4ull << 20;
};

struct SegmentKey {
  std::string log;
  uint64_t segment = 0;
  template <typename H>
  friend H AbslHashValue(H h, const SegmentKey& k) {
    return H::combine(std::move(h), k.log, k.segment);
  }
  bool operator==(const SegmentKey&) const = default;
};

class SegmentStore {
 public:
  static absl::StatusOr<std::unique_ptr<SegmentStore>> Open(SegmentStoreOptions options);
  ~SegmentStore();

  // Appends entries [first, first + entries.size()) at `epoch`; entries below the durable end
  // are skipped (a resend). Returns the durable end.
  absl::StatusOr<uint64_t> AddEntries(std::string_view log, uint64_t segment, uint64_t epoch,
                                      uint64_t first, const std::vector<std::string_view>& entries);
  // Persists `epoch` as the segment's fence (creating the segment if unknown) and returns the
  // durable end and the bytes its file holds. FENCED if a higher epoch fenced it already.
  struct FenceResult {
    uint64_t durable_end = 0;
    uint64_t durable_bytes = 0;
  };
  absl::StatusOr<FenceResult> Fence(std::string_view log, uint64_t segment, uint64_t epoch);

  struct ReadResult {
    std::vector<std::string> entries;  // from `from`, contiguous
    uint64_t durable_end = 0;
  };
  // Entries [from, min(to, durable end)), at most about `max_bytes` (0 = the default; at least
  // one entry when any is available).
  absl::StatusOr<ReadResult> Read(std::string_view log, uint64_t segment, uint64_t from,
                                  uint64_t to, uint64_t max_bytes);

  // Records that the segment holds exactly [0, end). FENCED below its fence epoch.
  absl::Status Seal(std::string_view log, uint64_t segment, uint64_t epoch, uint64_t end);
  // Removes the segment's files. OK when unknown.
  absl::Status Delete(std::string_view log, uint64_t segment);

  // Sealed segments this store holds completely and has not uploaded yet.
  std::vector<std::pair<SegmentKey, uint64_t>> PendingUploads();
  absl::Status MarkUploaded(const SegmentKey& key);

  // The durable end of a segment; nullopt when unknown.
  std::optional<uint64_t> DurableEnd(std::string_view log, uint64_t segment);

 private:
  struct BatchPos {
    uint64_t base;
    uint64_t pos;
    uint32_t count;
  };
  struct Segment {
    absl::Mutex mu;
    std::string path;  // <dir>/<log>/<segment>, without extension
    std::unique_ptr<fs::WritableFile> file ABSL_GUARDED_BY(mu);
    std::shared_ptr<fs::RandomAccessFile> reader ABSL_GUARDED_BY(mu);
    std::vector<BatchPos> index ABSL_GUARDED_BY(mu);
    uint64_t end ABSL_GUARDED_BY(mu) = 0;
    uint64_t file_size ABSL_GUARDED_BY(mu) = 0;
    uint64_t fence_epoch ABSL_GUARDED_BY(mu) = 0;
    uint64_t seen_epoch ABSL_GUARDED_BY(mu) = 0;  // highest epoch written at (not persisted)
    std::optional<uint64_t> sealed_end ABSL_GUARDED_BY(mu);
    bool uploaded ABSL_GUARDED_BY(mu) = false;
    bool deleted ABSL_GUARDED_BY(mu) = false;
    absl::Status error ABSL_GUARDED_BY(mu);  // sticky write error
  };

  explicit SegmentStore(SegmentStoreOptions options);
  absl::Status Recover();
  absl::Status RecoverSegment(const std::string& log, uint64_t segment, Segment* seg);
  // The segment, created in memory (and its log directory on disk) when `create`.
  absl::StatusOr<std::shared_ptr<Segment>> Find(std::string_view log, uint64_t segment,
                                                bool create);
  absl::Status CheckEpoch(std::string_view log, uint64_t segment, const Segment& seg,
                          uint64_t epoch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(seg.mu);
  absl::Status EnsureFile(Segment* seg) ABSL_EXCLUSIVE_LOCKS_REQUIRED(seg->mu);

  const SegmentStoreOptions options_;
  fs::FileSystem* const fs_;
  absl::Mutex mu_;
  absl::flat_hash_map<SegmentKey, std::shared_ptr<Segment>> segments_ ABSL_GUARDED_BY(mu_);
};

// "<segment, 20 digits>": sorts numerically as text.
std::string SegmentName(uint64_t segment);

}  // namespace kf::logstore
