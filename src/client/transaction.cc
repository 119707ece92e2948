// Producer::BeginTxn and the Transaction it returns (include/kingfisher/producer.h).
//
// Design: a transaction is a thin layer over ProducerImpl::AppendMessage: every message it sends
// (Begin, bodies, Commit/Rollback) carries `_tx` and the `wal.txn` context, so the producer
// gives it no `wal.autocommit` and retries it by the usual rules (retry.h already fails
// TRANSACTION_EXPIRED and INVALID_TRANSACTION_STATE at once). The one thing the layer adds is
// ordering: Commit waits until every body it knows of has completed, because a body retried
// after an ambiguous failure must not reach the server after the CommitTxn (it would be
// rejected, and the commit would have made the transaction visible without it).
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "client/client_internal.h"
#include "client/producer_impl.h"
#include "client/public_message.h"
#include "client/retry.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "kingfisher/producer.h"
#include "message/builders.h"
#include "message/message_trace.h"
#include "message/validate.h"
#include "trace/public_context.h"

namespace kf::client {
namespace {

using kingfisher::AppendCallback;
using kingfisher::AppendResult;
using kingfisher::Transaction;

// The transaction's state; shared with body callbacks, which may outlive the Transaction.
struct TxnState {
  enum class Phase { kOpen, kFinishing, kDone };

  absl::Mutex mu;
  Phase phase ABSL_GUARDED_BY(mu) = Phase::kOpen;
  int in_flight ABSL_GUARDED_BY(mu) = 0;  // bodies whose callback has not returned
  absl::Status first_body_error ABSL_GUARDED_BY(mu);
  int failed_body ABSL_GUARDED_BY(mu) = 0;  // 1-based index of that body
  int bodies ABSL_GUARDED_BY(mu) = 0;       // bodies sent so far
};

class TransactionImpl final : public Transaction {
 public:
  TransactionImpl(ProducerImpl* producer, std::string vchannel, TxnId id, absl::Time deadline,
                  trace::Context ctx, std::shared_ptr<trace::Span> span)
      : producer_(producer),
        vchannel_(std::move(vchannel)),
        txn_id_(id),
        deadline_(deadline),
        ctx_(std::move(ctx)),
        span_(std::move(span)),
        state_(std::make_shared<TxnState>()) {}

  ~TransactionImpl() override {
    if (!Finish("destroyed").ok()) return;  // committed or rolled back already
    // Best effort: the server would expire it anyway, but a rollback frees it at once.
    std::shared_ptr<trace::Span> span = span_;
    producer_->AppendMessage(
        Stamp(NewRollbackTxnMessage(vchannel_, txn_id_)),
        [span](absl::StatusOr<AppendResult> r) {
          span->RecordError(
              r.ok() ? absl::CancelledError("transaction destroyed without Commit or Rollback; "
                                            "rolled back")
                     : r.status());
          span->End();
        },
        deadline_, ctx_);
  }

  TxnId txn_id() const override { return txn_id_; }
  const std::string& vchannel() const override { return vchannel_; }

  void AppendAsync(kingfisher::Message message, AppendCallback done) override {
    if (message.type != MessageType::kInsert && message.type != MessageType::kDelete) {
      return done(StreamingError(
          StreamingCode::kInvalidArgument,
          absl::StrCat("a transaction body must be an Insert or a Delete, not ",
                       ToAbsl(MessageTypeName(message.type)), "; nothing was sent")));
    }
    if (message.vchannel.empty()) message.vchannel = vchannel_;
    if (message.vchannel != vchannel_) {
      return done(StreamingError(
          StreamingCode::kInvalidArgument,
          absl::StrCat("transaction ", txn_id_.value(), " is on vchannel ", vchannel_, ", not ",
                       message.vchannel, "; nothing was sent")));
    }
    absl::StatusOr<MutableMessage> body = ToMutableMessage(std::move(message));
    if (!body.ok()) return done(body.status());
    int index;
    {
      absl::MutexLock l(&state_->mu);
      if (state_->phase != TxnState::Phase::kOpen) {
        return done(absl::FailedPreconditionError(
            absl::StrCat("transaction ", txn_id_.value(),
                         " is already committed or rolled back; nothing "
                         "was sent")));
      }
      ++state_->in_flight;
      index = ++state_->bodies;
    }
    producer_->AppendMessage(
        Stamp(*std::move(body)),
        [state = state_, id = txn_id_, index,
         done = std::move(done)](absl::StatusOr<AppendResult> r) mutable {
          if (r.ok() && !r->txn_id) r->txn_id = id;
          absl::Status status = r.status();
          done(std::move(r));
          absl::MutexLock l(&state->mu);
          if (!status.ok() && state->first_body_error.ok()) {
            state->first_body_error = std::move(status);
            state->failed_body = index;
          }
          --state->in_flight;
        },
        deadline_, ctx_);
  }

  absl::StatusOr<AppendResult> Commit() override {
    if (absl::Status s = Finish("committed"); !s.ok()) return s;
    absl::Status body_error;
    int failed_body;
    {
      absl::MutexLock l(&state_->mu);
      state_->mu.Await(absl::Condition(
          +[](TxnState* s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->in_flight == 0; },
          state_.get()));
      body_error = state_->first_body_error;
      failed_body = state_->failed_body;
    }
    if (!body_error.ok()) {
      // Never commit a transaction that misses a body: roll it back (best effort; after
      // TRANSACTION_EXPIRED there is nothing left to roll back) and report the body's error.
      (void)producer_->AppendMessageSync(Stamp(NewRollbackTxnMessage(vchannel_, txn_id_)),
                                         deadline_, ctx_);
      absl::Status s =
          WithMessage(body_error, absl::StrCat("transaction ", txn_id_.value(),
                                               " not committed (rolled back): body ", failed_body,
                                               " failed: ", body_error.message()));
      Done(s);
      return s;
    }
    auto r = producer_->AppendMessageSync(Stamp(NewCommitTxnMessage(vchannel_, txn_id_)), deadline_,
                                          ctx_);
    if (r.ok() && !r->txn_id) r->txn_id = txn_id_;
    Done(r.status());
    return r;
  }

  absl::Status Rollback() override {
    if (absl::Status s = Finish("rolled back"); !s.ok()) return s;
    auto r = producer_->AppendMessageSync(Stamp(NewRollbackTxnMessage(vchannel_, txn_id_)),
                                          deadline_, ctx_);
    Done(r.status());
    return r.status();
  }

 private:
  // Moves from kOpen to kFinishing; FAILED_PRECONDITION if Commit or Rollback came first.
  absl::Status Finish(std::string_view what) {
    absl::MutexLock l(&state_->mu);
    if (state_->phase != TxnState::Phase::kOpen) {
      return absl::FailedPreconditionError(absl::StrCat("transaction ", txn_id_.value(),
                                                        " cannot be ", ToAbsl(what),
                                                        ": Commit or Rollback was already called"));
    }
    state_->phase = TxnState::Phase::kFinishing;
    return absl::OkStatus();
  }

  // The transaction is over: end wal.txn with the outcome.
  void Done(const absl::Status& s) {
    {
      absl::MutexLock l(&state_->mu);
      state_->phase = TxnState::Phase::kDone;
    }
    span_->RecordError(s);  // no-op for OK
    span_->End();
  }

  // `_tx` = {txn id} and `_tc` = wal.txn (replacing whatever the caller put there: every
  // message of the transaction shares the transaction's context).
  MutableMessage Stamp(MutableMessage m) const {
    kingfisher::v1::TxnContext txn;
    txn.set_txn_id(txn_id_.value());
    m.set_txn(txn);
    OverwriteTraceContext(ctx_, &m);
    return m;
  }

  ProducerImpl* const producer_;
  const std::string vchannel_;
  const TxnId txn_id_;
  const absl::Time deadline_;                // absl::InfinitePast(): per append
  const trace::Context ctx_;                 // carries the wal.txn span
  const std::shared_ptr<trace::Span> span_;  // wal.txn
  const std::shared_ptr<TxnState> state_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Transaction>> ProducerImpl::BeginTxn(
    std::string vchannel, kingfisher::TxnOptions options) {
  if (options.keepalive < kingfisher::Duration::zero()) {
    return StreamingError(StreamingCode::kInvalidArgument,
                          "transaction keepalive must not be negative");
  }
  const absl::Duration keepalive = AbslDuration(options.keepalive);
  int64_t keepalive_ms = absl::ToInt64Milliseconds(keepalive);
  if (keepalive_ms == 0 && keepalive > absl::ZeroDuration()) keepalive_ms = 1;
  if (auto p = PChannelOfVChannel(vchannel); !p.ok()) return p.status();

  const absl::Time deadline = options.deadline ? AbslTime(*options.deadline) : absl::InfinitePast();
  auto [ctx, span] =
      StartSpan(trace::ContextFromPublic(options.trace), "wal.txn", trace::SpanKind::kProducer);
  MutableMessage begin = NewBeginTxnMessage(vchannel, keepalive_ms);
  OverwriteTraceContext(ctx, &begin);
  auto r = AppendMessageSync(std::move(begin), deadline, ctx);
  absl::Status s = r.status();
  if (s.ok() && !r->txn_id) {
    s = absl::InternalError(
        "the server acknowledged BeginTxn without a txn id (does it support transactions?)");
  }
  if (!s.ok()) {
    span->RecordError(s);
    span->End();
    return s;
  }
  span->SetAttribute("txn.id", r->txn_id->value());
  return std::unique_ptr<Transaction>(new TransactionImpl(
      this, std::move(vchannel), *r->txn_id, deadline, std::move(ctx), std::move(span)));
}

}  // namespace kf::client
