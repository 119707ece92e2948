// BroadcastAppender: how the broadcaster appends one copy of a broadcast message to one
// vchannel. The production implementation (wiring step) appends through the client library's
// producer, keeping the message's `_ik`, so a retried or recovered append is deduplicated by
// the node (docs/semantics.md §3) and answered with the original result.
//
// Contract for implementations:
//   - `message` is complete: `_vc` (the target), `_bh`, `_tc` and `_ik` =
//     "bc<broadcast id>:<1-based index of the vchannel in the task>" are set; send it as is
//     (never replace `_ik`: the broadcaster's exactly-once argument rests on it).
//   - `ctx` is the broadcast's trace (Extract of `_tc`); a remote append starts
//     `wal.dist_append` under it. Never start `wal.autocommit` or `wal.txn` (docs/tracing.md §6:
//     a broadcast never creates them).
//   - `done` runs exactly once, on any thread, possibly before AppendAsync returns. Any error
//     is retried by the broadcaster later with the same message; an error may mean "appended
//     or not" (the dedupe makes the retry safe). Pass the node's verdict on with its streaming
//     code: a DropCollection refused with COLLECTION_NOT_FOUND counts as done (the vchannel
//     had dropped the collection already), not as a failure.
//
// Thread-safety: implementations must be thread-safe. Ownership: the broadcaster borrows the
// appender; it must outlive the broadcaster.
#pragma once

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/hybrid_time.h"
#include "message/message.h"
#include "message/message_id.h"
#include "trace/context.h"

namespace kf::streaming::ddl {

struct BroadcastAppendResult {
  MessageId id;
  TimeTick timetick;
  MessageId last_confirmed;
};

class BroadcastAppender {
 public:
  using Done = absl::AnyInvocable<void(absl::StatusOr<BroadcastAppendResult>) &&>;

  virtual ~BroadcastAppender() = default;
  virtual void AppendAsync(const trace::Context& ctx, MutableMessage message, absl::Time deadline,
                           Done done) = 0;
};

}  // namespace kf::streaming::ddl
