// AppendReplicated: how a secondary appends what its primary's replicator sends
// (docs/replication.md "The secondary"), into the WAL of the mapped pchannel.
//
// Each message becomes the secondary's own append: the WAL's stamps of the source (`_tt`,
// `_lc`, `_lcs`, `_wt`) are dropped, its vchannel moves from the source pchannel to this one
// (same name after the pchannel), and `_rh` records where it came from: source cluster, id,
// LCMID, timetick, vchannel, and the timetick of the message replicated before it (so that the
// WAL takes it only right after that one, replicate_state.h). `_ik` and `_bh` are dropped (they
// name the source cluster's producers and broadcasts; the checkpoint deduplicates); `_tc` is
// kept: the source's until the WAL overwrites it at `wal.appendimpl`.
//
// Messages outside transactions are appended in runs (one AppendBatch); a transaction gets a
// txn of its own here (Begin, then its bodies, then Commit, with the new txn id), rolled back
// if any of it fails. Every append runs under `replicate.secondary` (child of the message's
// `_tc`) > `wal.autocommit` (docs/tracing.md §5).
//
// A copy of one of the source's DDL broadcasts (it carries `_bh` there) is appended alone and
// recorded in `pieces` before and after (ddl_pieces.h), so that this cluster's coordinator
// runs the DDL's ACK callback once every copy landed. Null `pieces`: not recorded.
//
// The result has one entry per message, in order, up to and including the first that failed
// (IGNORED_OPERATION, already replicated, is not a failure); what follows it was not
// appended. Thread-safety: thread-safe; blocks until its appends are answered.
#pragma once

#include "kingfisher/v1/replicate.pb.h"
#include "replicate/ddl_pieces.h"
#include "trace/context.h"
#include "wal/wal.h"

namespace kf::replicate {

kingfisher::v1::ReplicateAppendResponse AppendReplicated(
    wal::Wal& wal, const kingfisher::v1::ReplicateAppendRequest& request, const trace::Context& ctx,
    const DdlPieces* pieces = nullptr);

}  // namespace kf::replicate
