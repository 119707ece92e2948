// ReplicatedDdl: a secondary's coordinator running the ACK callbacks of the primary's DDL
// broadcasts (docs/replication.md "DDL on the secondary"), so that its catalog follows the
// primary's: a replicated collection can be described, listed and searched here.
//
// The secondary's nodes append each vchannel's copy of a broadcast as it comes on its
// pchannel's replicate stream, in that pchannel's order, and record it in the metadata store
// (ReplicatedDdlPiece, replicate/ddl_pieces.h): written before the append, marked landed once
// the WAL holds it. Poll looks at those records; per source cluster in broadcast-id order
// (the primary's order: a drop never overtakes its create), for each broadcast whose every copy
// landed it runs the callback under `wal.bc_callback` (child of the copy's `_tc`: the primary's
// trace) and commits, in ONE fenced transaction, the callback's writes, the deletion of the
// copies' records (each unchanged since read) and a `done` marker (ClusterKeys::
// replicated_ddl_done, outside the prefix it reads); it stops at the first that is not complete
// or fails. So the callback takes effect once, in order, whatever crashes where.
// A copy recorded after that (two replicators of a pchannel racing while it moves) is deleted
// by the next Poll. The callback gets the message of the first copy and a task whose
// broadcast id is the primary's and whose vchannels are this cluster's.
//
// Thread-safety: Poll is for one thread (the coordinator's DDL term thread). Ownership:
// borrows the store (must outlive it). Errors of Poll: the store's (a broadcast whose callback
// or commit failed is logged and tried again at the next Poll); DATA_LOSS for a record that
// does not parse.
#pragma once

#include <stop_token>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "streaming/cluster_meta.h"
#include "streaming/ddl/ack_callback.h"
#include "streaming/ddl/fenced_store.h"

namespace kf::streaming::ddl {

class ReplicatedDdl {
 public:
  ReplicatedDdl(const FencedStore* store, const ClusterKeys& keys, AckCallback callback,
                absl::Duration call_timeout = absl::Seconds(5))
      : store_(store), keys_(keys), callback_(std::move(callback)), call_timeout_(call_timeout) {}

  // Applies every broadcast whose copies all landed; returns how many it applied.
  absl::StatusOr<int> Poll(std::stop_token stop);

 private:
  const FencedStore* const store_;
  const ClusterKeys keys_;
  const AckCallback callback_;
  const absl::Duration call_timeout_;
};

}  // namespace kf::streaming::ddl
