// Sequencer: the WAL adaptor's single writer of one pchannel (docs/semantics.md §1–§3). Under
// one lock it allocates a run's timeticks from the TSO (one batch per attempt), runs the
// chain's BeforeSequence hooks on each message with its timetick, stamps it (timetick, term,
// LCMID, the attempt's `wal.appendimpl` span), encodes it into the backend, runs AfterEnqueued
// and advances the last timetick and id: WAL order, timetick order and every interceptor's
// admission agree. A single Append is a run of one (run.h); a batch's run is ordinary messages
// only, whose hooks change no transaction, so one LCMID holds for all of it.
//
// Retries: when the backend refuses an entry (nothing enqueued), the entries after it in the
// run wait; a recoverable refusal (RESOURCE_EXHAUSTED, UNAVAILABLE) of a message outside a
// transaction is retried after a backoff (initial_backoff, doubling, at most 500 ms) until
// max_append_attempts attempts, each with its own timetick and `wal.appendimpl` span, and
// the rest of the run follows it in order. A txn message is not retried (its admission cannot
// be replayed at a new timetick: AfterAbandoned failed its txn; the client retries it whole).
// What is rejected (a BeforeSequence hook) or refused for good is answered at once
// (Completion::FinishNow); what is enqueued is answered by the run's completion.
//
// Also the idle pchannel's non-persisted TimeTick (IdleTick), so that every timetick is handed
// out here.
//
// Thread-safety: thread-safe. The lock (mutex()) is also the one BeforeSequence and
// AfterEnqueued hooks run under: interceptor state touched only there may be guarded by it.
// Errors: none returned; each append is answered with its own (see above and wal.h).
#pragma once

#include <atomic>
#include <cstddef>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/hybrid_time.h"
#include "common/strong_id.h"
#include "message/message_id.h"
#include "storage/tso/timestamp_source.h"
#include "wal/backend.h"
#include "wal/completion.h"
#include "wal/interceptor.h"
#include "wal/run.h"
#include "wal/txn/txn_manager.h"

namespace kf::wal {

struct SequencerOptions {
  std::string pchannel;
  Term term;
  TimestampSource* tso = nullptr;  // borrowed
  int max_append_attempts = 5;
  absl::Duration initial_backoff = absl::Milliseconds(5);
};

class Sequencer {
 public:
  // Borrows everything; `txns` gives the LCMID, `readers` says whether the buffer retains.
  Sequencer(SequencerOptions options, WalBackend* backend, InterceptorChain* chain,
            Completion* completion, const TxnManager* txns, const std::atomic<int>* readers)
      : options_(std::move(options)),
        backend_(backend),
        chain_(chain),
        completion_(completion),
        txns_(txns),
        readers_(readers) {}

  // The state recovered from the log (recovery.h), before the first append.
  void Restore(TimeTick last_timetick, std::optional<MessageId> last_id) ABSL_LOCKS_EXCLUDED(mu_);

  // Sequences the entries of `run` that are in flight, in order, with the retries above;
  // returns once each is enqueued or answered. The caller holds a reference to `run`.
  void Sequence(Run& run) ABSL_LOCKS_EXCLUDED(mu_);

  // One round of an idle pchannel: when something was appended and all of it is settled, a
  // timetick for a non-persisted TimeTick. `observe` runs under the lock with it (the
  // watermark); the tick enters the write-ahead buffer if someone reads. False when skipped.
  bool IdleTick(absl::FunctionRef<void(TimeTick)> observe) ABSL_LOCKS_EXCLUDED(mu_);

  TimeTick last_timetick() const ABSL_LOCKS_EXCLUDED(mu_);
  std::optional<MessageId> last_id() const ABSL_LOCKS_EXCLUDED(mu_);  // last entry enqueued

  absl::Mutex* mutex() const ABSL_LOCK_RETURNED(mu_) { return &mu_; }

 private:
  // One attempt over the in-flight entries of `run` from `from` on.
  struct Attempt {
    InterceptorChain::Appends rejected;  // by a BeforeSequence hook: to answer now
    std::optional<size_t> refused;       // the entry the backend (or the TSO) refused
    absl::Status status;                 // why
  };
  Attempt SequenceOnce(Run& run, size_t from) ABSL_LOCKS_EXCLUDED(mu_);
  // Stamps `a` at `tt` with LCMID `lcmid` (nullopt: itself) and opens its `wal.appendimpl`.
  void Stamp(AppendContext& a, TimeTick tt, const std::optional<MessageId>& lcmid)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Encodes `a` into the backend, `ref` going to its callback; the backend's id or refusal.
  absl::StatusOr<MessageId> Enqueue(AppendContext& a, RunRef ref, size_t index)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the attempt whose enqueue failed with `status` (nothing was written).
  static void EndFailedAttempt(AppendContext& a, const absl::Status& status);
  absl::Duration Backoff(int attempts) const;

  const SequencerOptions options_;
  WalBackend* const backend_;
  InterceptorChain* const chain_;
  Completion* const completion_;
  const TxnManager* const txns_;
  const std::atomic<int>* const readers_;

  mutable absl::Mutex mu_;
  TimeTick last_timetick_ ABSL_GUARDED_BY(mu_);
  std::optional<MessageId> last_id_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::wal
