// RecoverWal: what a WAL adaptor needs to know of its log before it takes appends, read from
// the log itself (docs/semantics.md §3, docs/wal-internals.md). One pass from the log's start:
// every DDL (exclusive type) rebuilds the collection table and the broadcast results (a
// collection may have been created long ago); the tail (the last `tail_bytes`, from
// WalBackend::TailStart) rebuilds the `_ik` results and gives the last timetick. Entries before
// the tail are filtered by type without being decoded. The last id is the log's last entry.
// WalImpl hands each part to its owner: the interceptors (tables), the sequencer (last timetick
// and id), the TSO (raised above the last timetick), the transaction manager (every txn id up to
// the last timetick belongs to an earlier owner) and the write-ahead buffer (it starts after the
// last id).
//
// Replication (docs/replication.md): every AlterReplicateConfig is a DDL of that pass; while
// the configuration makes this cluster a secondary every entry is decoded, so that the
// checkpoint of what was replicated (`_rh`) is exact wherever the tail begins.
//
// From a checkpoint of that state (the collection table, the broadcast results and the
// replicate state as of one message, written by the pchannel's follower:
// docs/recovery-storage.md) only the DDL (and on a secondary every entry) after
// that message are read — from it, or from the tail if that starts earlier — so the log below
// may have been truncated and the open reads a bounded part of it.
//
// Thread-safety: reads `backend` through its own scanner; the caller must not append meanwhile
// (everything durable is then readable, so a scanner's DEADLINE_EXCEEDED means the end).
// Errors: the backend's (TailStart, Read, the scan), DATA_LOSS for an entry that does not decode.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/hybrid_time.h"
#include "message/message_id.h"
#include "wal/backend.h"
#include "wal/collections/collection_table.h"
#include "wal/idempotency_interceptor.h"
#include "wal/replicate_state.h"

namespace kf::wal {

struct RecoveryOptions {
  std::string pchannel;    // for errors
  std::string cluster_id;  // WalOptions::cluster_id: whose role the replicate state tracks
  // How far back from the tail every entry is decoded (WalOptions::recovery_scan_bytes).
  uint64_t tail_bytes = 64ull << 20;
  size_t dedup_window_per_producer = 4096;  // WalOptions::dedup_window_per_producer
  // The state as of checkpoint->after_id; null: read every DDL from the log's start.
  const kingfisher::v1::WalState* checkpoint = nullptr;
};

struct RecoveredState {
  std::optional<MessageId> last_id;          // nullopt: the log is empty
  TimeTick last_timetick;                    // the tail's highest (0: none)
  CollectionTable collections;               // every DDL replayed
  std::unique_ptr<ResultTable> broadcasts;   // BroadcastKey -> the DDL's result, every DDL
  std::unique_ptr<ResultTable> idempotency;  // `_ik` -> the append's result, the tail's
  ReplicateState replicate;                  // every AlterReplicateConfig; on a secondary, `_rh`
};

absl::StatusOr<RecoveredState> RecoverWal(WalBackend& backend, const RecoveryOptions& options);

}  // namespace kf::wal
