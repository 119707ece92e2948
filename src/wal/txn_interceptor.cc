#include "wal/txn_interceptor.h"

#include <string_view>
#include <utility>

#include "common/status_macros.h"
#include "wal/run.h"

namespace kf::wal {
namespace {

// The body whose durability is being counted on this thread (AfterDurable): a commit gate that
// fires then hands its hold to that body, so the commit is acknowledged after the body even
// when the body's own answer waits for its appending thread (run.h).
thread_local AppendContext* t_settling_body = nullptr;

}  // namespace

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
    case AppendRole::kBody:
      RETURN_IF_ERROR(txns_->AddBody(a.txn_id, vchannel, tt));
      break;
    case AppendRole::kCommit:
      // The gate may fire inside Commit (nothing in flight): it only lets go of the run then,
      // as the durable callback cannot have run before the enqueue.
      RETURN_IF_ERROR(
          txns_->Commit(a.txn_id, vchannel, tt, [hold = HoldRun(a), &a](absl::Status gate) mutable {
            RunRef held = std::move(hold);
            if (!gate.ok() && a.hold_status.ok()) {
              a.hold_status = std::move(gate);
            }
            if (t_settling_body != nullptr) {
              t_settling_body->after_answer = [held = std::move(held)]() mutable {};
            }
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
  t_settling_body = &a;
  txns_->BodyDurable(a.txn_id);
  t_settling_body = nullptr;
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
