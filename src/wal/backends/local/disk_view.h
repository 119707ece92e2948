// DiskView: one listing of a pchannel directory (segments, fence terms, seal records) and the
// rules that turn it into the segments readers may see (docs/local-wal-format.md, "Which
// segments count"). Used by the writer's recovery and by read-only refreshes.
// Pure functions of the file system; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/strong_id.h"
#include "storage/fs/file_system.h"
#include "wal/backends/local/layout.h"

namespace kf::wal::local {

struct SegmentFile {
  std::string name;
  uint64_t base = 0;
  Term term;
  uint64_t size = 0;  // stat'ed before the fence was read (see LoadDiskView)
};

struct DiskView {
  std::optional<Term> fence;  // highest fence term on disk
  std::map<Term, SealRecord> seals;
  std::vector<SegmentFile> segments;  // sorted by (base, term)
};

// Lists segments and stats them first, then reads the fence, then the seals: a reader that
// saw no higher fence afterwards knows the sizes it saw were written before any fence.
absl::StatusOr<DiskView> LoadDiskView(fs::FileSystem* fs, const std::string& dir);

// Highest term among fence files in `fence_dir` (nullopt if none).
absl::StatusOr<std::optional<Term>> ReadFenceTerm(fs::FileSystem* fs, const std::string& dir);
// Highest term among these names of the fence directory's entries (nullopt if none).
std::optional<Term> HighestFenceTerm(const std::vector<std::string>& names);

struct EffectiveSegment {
  enum class Kind {
    kFull,     // complete: every byte must be a valid batch
    kCapped,   // sealed: readable up to `cap` bytes, ending at entry `cap_end_offset`
    kLive,     // the newest segment of the newest term: may still grow
    kPending,  // last segment of a fenced term not sealed yet: its end is undecided
  };
  SegmentFile file;
  Kind kind = Kind::kFull;
  uint64_t cap = 0;
  uint64_t cap_end_offset = 0;
};

// Applies seal records: drops segments a fenced writer created after its seal point (they are
// returned in `*garbage` if non-null), caps sealed segments, classifies the rest.
std::vector<EffectiveSegment> ComputeEffective(const DiskView& view,
                                               std::vector<SegmentFile>* garbage);

}  // namespace kf::wal::local
