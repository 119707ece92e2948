// TxnMessage: the synthetic `Txn` message (type kTxn, docs/semantics.md §2/§3) a reader delivers at
// a CommitTxn in place of the transaction's Begin, bodies and Commit.
//
// Design (the least invasive one): TxnMessage IS an ImmutableMessage, so it flows through every
// existing ImmutableMessagePtr path (scanners, write-ahead buffer readers, filters, the Consume
// RPC) unchanged, and adds one accessor, inner(): Begin, bodies and Commit in WAL order, shared
// (not copied) with whoever else holds them. Its own message is the CommitTxn's message with
// only `_t` changed to Txn, so it carries the commit's id, timetick (`_tt`), LCMID (`_lc`/`_lcs`),
// vchannel, txn context and trace context (`_tc`; docs/tracing.md §5 "Assembled Txn messages take
// the CommitTxn's `_tc`"). Consumers reach inner() through AsTxnMessage().
//
// Why a downcast is safe: ImmutableMessage has no virtual functions (message.h is shared and hot;
// we leave it alone), so AsTxnMessage() relies on the invariant "every ImmutableMessage of type
// kTxn is a TxnMessage". It holds because a Txn is never appended (validate.h rejects producing
// one) and TxnBuffer, the one place that turns log messages into deliveries, rejects a stored
// kTxn with DATA_LOSS instead of passing it through. Do not build an ImmutableMessage of type
// kTxn any other way.
//
// Thread-safety: immutable after Assemble; safe for concurrent reads. Ownership: created only as
// std::shared_ptr (so deletion runs ~TxnMessage even through an ImmutableMessagePtr).
#pragma once

#include <memory>
#include <vector>

#include "message/message.h"

namespace kf::wal {

class TxnMessage final : public ImmutableMessage {
  struct Passkey {};

 public:
  // REQUIRES: inner = [BeginTxn, bodies..., CommitTxn] of one txn, non-null, in WAL order.
  static std::shared_ptr<const TxnMessage> Assemble(std::vector<ImmutableMessagePtr> inner);

  // Begin, bodies and Commit, in WAL order (the Consume RPC's `inner`).
  const std::vector<ImmutableMessagePtr>& inner() const { return inner_; }

  TxnMessage(Passkey, MutableMessage txn, MessageId id, std::vector<ImmutableMessagePtr> inner);

 private:
  std::vector<ImmutableMessagePtr> inner_;
};

// The TxnMessage behind `m` if `m` is a Txn message, else nullptr. Borrowed: valid while `m` is.
const TxnMessage* AsTxnMessage(const ImmutableMessage& m);

}  // namespace kf::wal
