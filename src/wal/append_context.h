// AppendContext: one append on its way through the WAL adaptor (wal_impl.h): the message and the
// caller's callback, what the interceptors (interceptor.h) decided about it, the sequencer's
// stamp (sequencer.h) and the result the completion (completion.h) answers with. It lives in
// its Run (run.h): a batch's run of ordinary messages, or a run of one for anything else.
//
// Stages: kAdmitting (the chain's Admit hooks) -> kInFlight (counted in flight, `wal.append`
// opened) -> kEnqueued (the backend has the entry) -> kAnswered. An Admit hook may stop it as
// kRejected (answered with `result`) or kDuplicate (the hook took the callback over: a retried
// `_ik` or broadcast gets the original's result); a BeforeSequence hook or a backend refusal
// the retries cannot overcome rejects it too.
//
// Thread-safety: none of its own; it is handed from stage to stage. Until the backend accepts
// the entry only the appending thread touches it. From then on the entry's completion writes
// the message, the spans, `result`, `txn` and `hold_status`, while the appending thread may
// still read what the completion never writes (`role`, `exclusive`, `txn_id`, `collection`,
// `id`, `retain`) for the AfterEnqueued hooks, and free a message nobody keeps (`retain` false).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/hybrid_time.h"
#include "common/strong_id.h"
#include "kingfisher/v1/message.pb.h"
#include "message/message.h"
#include "message/message_id.h"
#include "trace/context.h"
#include "trace/span.h"
#include "wal/collections/collection_table.h"
#include "wal/idempotency.h"
#include "wal/replicate_state.h"
#include "wal/wal.h"
#include "wal/wal_metrics.h"

namespace kf::wal {

class Run;

// What an append does to the pchannel's transactions, from its type and `_tx`.
enum class AppendRole : uint8_t { kPlain, kTimeTick, kBegin, kBody, kCommit, kRollback };

struct AppendContext {
  enum class Stage : uint8_t { kAdmitting, kDuplicate, kRejected, kInFlight, kEnqueued, kAnswered };
  // An interceptor's position in the chain that stopped nobody (interceptor.h).
  static constexpr uint8_t kPassed = 0xff;

  // Admit's verdicts (interceptor.h). Reject: the append is answered with `status`. TakeOver:
  // the interceptor answers it itself (it took `done`); the interceptors that admitted it
  // before are finished with `cause`.
  void Reject(absl::Status status) {
    stage = Stage::kRejected;
    result = std::move(status);
  }
  void TakeOver(absl::Status cause) {
    stage = Stage::kDuplicate;
    result = std::move(cause);
  }

  // No txn role, not exclusive, not a TimeTick: what a batch's run is made of, and what most
  // interceptors have nothing to do with (interceptor.h).
  bool ordinary() const { return role == AppendRole::kPlain && !exclusive; }

  // --- Set by the WAL when the append arrives.
  AppendRole role = AppendRole::kPlain;
  bool exclusive = false;  // an exclusive (DDL) type: fails its vchannel's txns
  bool metered = false;    // a Wal::Append call, not the adaptor's own TimeTick: metrics, traffic
  Stage stage = Stage::kAdmitting;
  bool in_flight = false;  // counted in the WAL's appends in flight (admission.h)
  bool retain = false;     // the write-ahead buffer (or an AfterDurable hook) gets the message
  // The chain's bookkeeping: the position of the interceptor that stopped the append in Admit,
  // and in its current attempt's BeforeSequence (kPassed: none did). The hooks that undo
  // (Finish, AfterAbandoned) go only to the interceptors before it.
  uint8_t admit_stop = kPassed;
  uint8_t sequence_stop = kPassed;
  int attempts = 0;  // sequencing attempts (one `wal.appendimpl` span each)
  TxnId txn_id;      // roles kBegin (once begun) .. kRollback
  MutableMessage msg;
  AppendResultCallback done;
  const trace::Context* caller = nullptr;  // the caller's context, until the append enters
  WalMetrics::Clock::time_point started;
  Run* run = nullptr;  // the run this lives in (run.h: HoldRun)

  // --- The interceptors' slots.
  ReplicateAppend replicate;                      // ReplicateInterceptor: `_rh`, a config
  CollectionAppend collection;                    // CollectionInterceptor: what the rules check
  std::optional<IdempotencyKey> broadcast_key;    // BroadcastInterceptor: the key it holds
  std::optional<IdempotencyKey> key;              // IdempotencyInterceptor: the `_ik` it holds
  std::optional<kingfisher::v1::TxnContext> txn;  // TxnInterceptor: for the result
  // Set by whoever held the run (HoldRun) and failed, e.g. the txn's commit gate: a durable
  // append whose hold failed is answered with it.
  absl::Status hold_status;
  // Run right after this append is answered, e.g. what lets another run be answered after this
  // one (TxnInterceptor: a body tells its txn, whose commit gate may then fire).
  absl::AnyInvocable<void() &&> after_answer;

  // --- The sequencer's stamp of the last attempt.
  MessageId id;  // the backend id, set while the entry is encoded (before it can be durable)
  TimeTick timetick;
  // Encoded into the entry; applied to the message only when it is retained (after it is
  // durable, off the appending thread).
  AppendStamp stamp;
  uint64_t bytes = 0;         // the encoded entry
  trace::Context append_ctx;  // wal.append's
  std::shared_ptr<trace::Span> append_span;
  std::shared_ptr<trace::Span> impl_span;  // the current attempt's wal.appendimpl

  // The settled result (the completion's), or the error the append is answered with. Not built
  // with a message: a Status with one allocates, and every append has one.
  absl::StatusOr<AppendResult> result;
};

}  // namespace kf::wal
