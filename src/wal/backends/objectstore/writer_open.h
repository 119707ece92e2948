// Opening an objectstore log for writing at a term (docs/objectstore-wal.md "Fencing and
// recovery"):
//   1. CAS the metadata: term = T (lower: FENCED), generation + 1. From here on the old
//      writer's next metadata change (a roll) fails, and its acknowledgements stop: it checks
//      the generation before every one.
//   2. Every segment not yet sealed is fenced: list its blocks, find the first missing index k
//      of the contiguous run from 0, conditionally create a fence block at k (if a data block
//      won the race, k + 1, ...). The old writer's upload of block k now fails; blocks it
//      stored beyond k were never acknowledged (acks are in order) and are ignored.
//   3. CAS the metadata again: those segments sealed at k blocks, a new open segment appended.
// Only the open segments are listed and only the last block of each is read: recovery cost
// does not grow with the log.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/strong_id.h"
#include "storage/meta/meta_store.h"
#include "storage/object/object_store.h"
#include "wal/backends/objectstore/layout.h"
#include "wal/backends/objectstore/log_meta.h"
#include "wal/backends/objectstore/log_view.h"

namespace kf::wal::objectstore {

struct RecoveredLog {
  VersionedMeta meta;                 // as written by step 3; the open segment is last
  std::vector<SegmentView> segments;  // one per meta segment
};

absl::StatusOr<RecoveredLog> OpenForWrite(object::ObjectStore* store, meta::MetaStore* meta,
                                          const Layout& layout, Term term,
                                          absl::Duration request_timeout, absl::Time deadline);

// Step 2 for one segment: fences it and returns what it holds (sealed).
absl::StatusOr<SegmentView> FenceSegment(object::ObjectStore* store, const Layout& layout,
                                         uint64_t segment, Term term,
                                         absl::Duration request_timeout, absl::Time deadline);

}  // namespace kf::wal::objectstore
