// The broadcast ACK callback (docs/semantics.md §5): the work a DDL does once every target vchannel
// has acknowledged its copy — the catalog transition, whose store write is also what nodes and
// clients watch to invalidate their caches.
//
// A callback does not write: it reads what it needs and returns the writes (with the compares
// that make them valid). The broadcaster commits them in ONE transaction with the task's
// transition to BROADCAST_DONE, conditioned on the task being unchanged, so they take effect
// exactly once even when the coordinator crashes before, during or after the commit (a
// re-run after a crash finds the task DONE, or computes and commits the same writes once).
// A callback may run more than once; only one run's writes are ever committed. Failing
// compares of its own mean "retry later": the broadcaster calls it again after a backoff.
//
// Thread-safety: callbacks run on a broadcaster worker thread, concurrently for different
// tasks; they must be thread-safe. Errors: any error is logged and the callback is retried
// after a backoff (the task's locks stay held meanwhile).
#pragma once

#include <cstdint>
#include <functional>
#include <stop_token>
#include <vector>

#include "absl/status/statusor.h"
#include "kingfisher/v1/ddl.pb.h"
#include "message/message.h"
#include "storage/meta/meta_store.h"
#include "trace/context.h"

namespace kf::streaming::ddl {

struct AckCallbackContext {
  // The callback's trace: inside `wal.bc_callback`, parent = Extract(message).
  trace::Context trace;
  // Stop of the broadcaster (the base cancellation): a callback that waits must give up on it.
  std::stop_token stop;
  // The broadcast message (no `_vc`/`_ik`) and the task with every vchannel's ack.
  const MutableMessage& message;
  const kingfisher::v1::BroadcastTask& task;
};

// Committed atomically with the task's transition to DONE (see above).
struct AckWrites {
  std::vector<meta::Compare> compares;
  std::vector<meta::Op> ops;
};

using AckCallback = std::function<absl::StatusOr<AckWrites>(const AckCallbackContext&)>;

}  // namespace kf::streaming::ddl
