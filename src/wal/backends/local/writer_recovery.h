// RecoverForWrite: the open protocol of a writer at term T on a pchannel directory
// (docs/local-wal-format.md, "Opening for write"): fence T durably, seal every older term at
// its durable end, drop a fenced writer's late segments, recover the own tail, and have a
// segment open for appending at the next offset.
// Thread-safety: a function; two writers racing on one directory are ordered by the fence.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "wal/backends/local/local_backend.h"
#include "wal/backends/local/log_state.h"

namespace kf::wal::local {

struct RecoveredLog {
  std::shared_ptr<LogState> state;
  LocalBackend::WriterInit init;
};

// FENCED if a term above `term` exists; DATA_LOSS on damage that is not a torn tail.
absl::StatusOr<RecoveredLog> RecoverForWrite(fs::FileSystem* fs, const std::string& dir, Term term);

}  // namespace kf::wal::local
