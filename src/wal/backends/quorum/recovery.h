// Recovery of a log's last open segment by a new writer (docs/quorum-wal.md, "Opening"):
// fence every ensemble member at the new epoch (2 answers needed), take the highest durable
// end among the answers, copy the entries a quorum lacks from the replica that has them (at the
// new epoch) until at least 2 replicas hold [0, end), and return the segment's sealed record.
//
// Thread-safety: a function; runs on the opener's thread. Errors: FENCED (a replica was fenced at
// a higher epoch), UNAVAILABLE (fewer than 2 replicas answered or could be repaired), DATA_LOSS.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "wal/backends/quorum/quorum_meta.h"

namespace kf::wal::quorum {

class LogStorePool;

absl::StatusOr<SegmentRecord> RecoverSegment(LogStorePool* pool, const std::string& log,
                                             uint64_t segment, SegmentRecord record, uint64_t epoch,
                                             absl::Duration rpc_timeout);

}  // namespace kf::wal::quorum
