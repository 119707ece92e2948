// TxnInterceptor: the transaction manager (txn/txn_manager.h, docs/semantics.md §3) as a member
// of the append chain (interceptor.h). Under the sequencer lock, with the message's timetick,
// BeforeSequence admits by role: BeginTxn begins the txn (txn id = its timetick, written into
// its `_tx`), a body, CommitTxn or RollbackTxn is admitted or rejected (TRANSACTION_EXPIRED,
// INVALID_TRANSACTION_STATE), and an exclusive message fails the active txns of its vchannel.
// A CommitTxn holds its run (HoldRun) until the txn's commit gate fires, so it is acknowledged
// only once it is durable AND every body of its txn is answered (a failed gate answers it with
// the failure). AfterEnqueued records a Begin's id (the LCMID); AfterDurable arranges for a body
// to count as done once it is answered (after_answer), not merely durable, so no body's ack can
// follow its commit's; // AfterAbandoned fails the txn of a message that will not (or may not) be
// in the log (a body: BodyFailed; Begin, Commit, Rollback: FailTxn).
//
// Thread-safety: thread-safe (TxnManager has its own lock; the hooks that need the order of
// appends run under the sequencer lock).
#pragma once

#include "wal/interceptor.h"
#include "wal/txn/txn_manager.h"

namespace kf::wal {

class TxnInterceptor final : public AppendInterceptor {
 public:
  explicit TxnInterceptor(TxnManager* txns) : txns_(txns) {}  // borrowed

  uint32_t hooks() const override {
    return kBeforeSequence | kAfterEnqueued | kAfterDurable | kAfterAbandoned;
  }
  uint32_t ordinary_hooks() const override { return 0; }  // no txn to admit, fail or settle
  absl::Status BeforeSequence(AppendContext& append, TimeTick tt) override;
  void AfterEnqueued(AppendContext& append) override;
  void AfterDurable(AppendContext& append, const ImmutableMessagePtr& message) override;
  void AfterAbandoned(AppendContext& append, const absl::Status& cause) override;

 private:
  TxnManager* const txns_;
};

}  // namespace kf::wal
