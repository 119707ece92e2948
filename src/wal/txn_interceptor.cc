#include "wal/txn_interceptor.h"

#include <string_view>
#include <utility>

#include "common/status_macros.h"
#include "message/properties.h"
#include "wal/run.h"

namespace kf::wal {

absl::Status TxnInterceptor::BeforeSequence(AppendContext& a, TimeTick tt) {
  if (a.ordinary() || a.role == AppendRole::kTimeTick) return absl::OkStatus();
  // A view into the `_vc` property: dangles once the properties change (kBegin's set_txn below
  // inserts `_tx`, which moves later entries), so it is not used after that.
  const std::string_view vchannel = a.msg.vchannel();
  switch (a.role) {
    case AppendRole::kPlain:  // exclusive
      txns_->FailVChannel(vchannel);
      return absl::OkStatus();
    case AppendRole::kBegin: {
      auto requested = a.msg.txn();
      ASSIGN_OR_RETURN(kingfisher::v1::TxnContext txn,
                       txns_->BeginTxn(vchannel, requested ? requested->keepalive_ms() : 0, tt));
      a.txn_id = TxnId(txn.txn_id());
      a.msg.set_txn(txn);
      a.txn = std::move(txn);
      return absl::OkStatus();
    }
    case AppendRole::kBody: {
      // A replicated copy (`_rh`) counts nothing: its primary bounded the transaction, with
      // room for what the copy carries more (kTxnMessageBytes), and a secondary appends one
      // replicated transaction at a time. Counted, a copy could exceed what its source took.
      const uint64_t bytes = a.msg.HasProperty(prop::kReplicate) ? 0 : a.msg.EncodedSize();
      RETURN_IF_ERROR(txns_->AddBody(a.txn_id, vchannel, tt, bytes));
      break;
    }
    case AppendRole::kCommit:
      // The gate fires once every body in flight is answered (AfterDurable below), inside
      // Commit when none is: it lets go of the commit's run, which is answered after them.
      RETURN_IF_ERROR(
          txns_->Commit(a.txn_id, vchannel, tt, [hold = HoldRun(a), &a](absl::Status gate) mutable {
            RunRef held = std::move(hold);
            if (!gate.ok() && a.hold_status.ok()) a.hold_status = std::move(gate);
          }));
      break;
    case AppendRole::kRollback:
      RETURN_IF_ERROR(txns_->Rollback(a.txn_id, vchannel, tt));
      break;
    case AppendRole::kTimeTick:
      break;
  }
  a.txn = a.msg.txn();  // for the result: the message may be gone by then
  return absl::OkStatus();
}

void TxnInterceptor::AfterEnqueued(AppendContext& a) {
  if (a.role == AppendRole::kBegin) txns_->SetBeginId(a.txn_id, a.id);
}

void TxnInterceptor::AfterDurable(AppendContext& a, const ImmutableMessagePtr& /*message*/) {
  if (a.role != AppendRole::kBody) return;
  // A body counts as in flight until it is answered, not merely durable: its answer may still
  // wait for its appending thread (run.h), and a commit must not be acknowledged before any of
  // its bodies (docs/semantics.md §3).
  a.after_answer = [txns = txns_, txn_id = a.txn_id] { txns->BodyDurable(txn_id); };
}

void TxnInterceptor::AfterAbandoned(AppendContext& a, const absl::Status& cause) {
  switch (a.role) {
    case AppendRole::kBody:
      txns_->BodyFailed(a.txn_id, cause);
      break;
    case AppendRole::kBegin:
    case AppendRole::kCommit:
    case AppendRole::kRollback:
      txns_->FailTxn(a.txn_id, cause);
      break;
    case AppendRole::kPlain:
    case AppendRole::kTimeTick:
      break;  // nothing admitted (a failed exclusive message still failed its txns: harmless)
  }
}

}  // namespace kf::wal
