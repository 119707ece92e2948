// DdlPieces: how a secondary's node records the copies of the primary's DDL broadcasts that it
// appends (docs/replication.md "DDL on the secondary"), so that the coordinator can run the
// DDL's ACK callback here (streaming/ddl/replicated_ddl.h) once every copy landed.
//
// A copy is written to the metadata store (ReplicatedDdlPiece, landed = false) BEFORE its
// append, and marked landed after it. A node that dies between the append and the mark leaves
// the piece unlanded; Resolve, run over the WALs the node serves, marks it landed when its
// WAL's durable checkpoint for the source cluster is at or past it (a replicated message at or
// below the checkpoint is in the log: replicate_state.h). Write-ahead plus that check is what
// makes every landed copy known however the node dies. Recording a CreateCollection's copy
// also raises this cluster's collection-id counter to the primary's id, in the same
// transaction, so that should this cluster be promoted, even before the callback ran, its own
// collections never take a replicated id (or its vchannels).
//
// Thread-safety: thread-safe. Ownership: borrows the store (must outlive it). Errors: the
// store's; a piece or counter that does not parse is DATA_LOSS.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kingfisher/v1/ddl.pb.h"
#include "storage/meta/meta_store.h"
#include "streaming/cluster_meta.h"
#include "wal/wal.h"

namespace kf::replicate {

class DdlPieces {
 public:
  DdlPieces(meta::MetaStore* store, std::string cluster,
            absl::Duration call_timeout = absl::Seconds(5))
      : store_(store), keys_(cluster), call_timeout_(call_timeout) {}

  // Before the append. Writes nothing once the coordinator applied the broadcast.
  absl::Status Offer(const kingfisher::v1::ReplicatedDdlPiece& piece) const;
  // After the append (or IGNORED_OPERATION: it was there). Only a piece still recorded.
  absl::Status MarkLanded(const kingfisher::v1::ReplicatedDdlPiece& piece) const;
  // Whether `wal` holds `piece` durably: its checkpoint for the piece's source is at or past it.
  static bool InLog(const wal::Wal& wal, const kingfisher::v1::ReplicatedDdlPiece& piece);
  // Marks landed each unlanded piece of these WALs' pchannels that its WAL's durable checkpoint
  // covers (whatever the WAL's role now: a promoted cluster still completes what it had).
  absl::Status Resolve(const std::vector<std::shared_ptr<wal::Wal>>& wals) const;

 private:
  std::string Key(const kingfisher::v1::ReplicatedDdlPiece& piece) const;

  meta::MetaStore* const store_;
  const streaming::ClusterKeys keys_;
  const absl::Duration call_timeout_;
};

}  // namespace kf::replicate
