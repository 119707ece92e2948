#include "wal/wal_impl.h"

#include <atomic>
#include <future>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/status_macros.h"
#include "message/builders.h"
#include "message/message_trace.h"
#include "wal/catchup_scanner.h"

namespace kf::wal {

// One append travelling through the adaptor. Owned by shared_ptr because the backend callback
// and the retry path both need it.
struct WalImpl::Pending {
  WalImpl* wal;  // the backend callback captures only the shared_ptr (fits AnyInvocable inline)
  MutableMessage msg;
  AppendResultCallback done;
  std::optional<IdempotencyKey> key;
  trace::Context append_ctx;                      // wal.append (or the caller's for TimeTick)
  std::shared_ptr<trace::Span> append_span;       // wal.append
  std::shared_ptr<trace::Span> impl_span;         // the current attempt's wal.appendimpl
  bool counted = false;                           // counts toward in_flight_
  std::optional<kingfisher::v1::TxnContext> txn;  // for the result; msg is gone by then
  // The backend may report durability before Append has returned the id (even on the same
  // thread), so both events arrive here and the second one completes the append.
  TimeTick timetick;
  MessageId id;
  absl::Status durable_status;
  std::atomic<int> arrivals{0};
};

// Completions run on the backend's callback thread. Memory freed there goes back to glibc's
// arena under the arena lock while this thread allocates from the same arena, so every object
// that died over there was a lock hand-off between the two threads (malloc/free were half of
// the CPU profile, much of it futex). Freed here, the message's payload, property nodes and
// no-op spans land in this thread's malloc cache and serve the next append (tmpfs, 1 KiB,
// 4096 in flight: 160k -> 200k appends/s, 6.4 -> 4.9 us CPU per append).
void WalImpl::ReleaseEnqueued(Pending& p) {
  p.txn = p.msg.txn();
  p.msg = MutableMessage();
  p.append_ctx = trace::Context();  // only a retry would start another wal.appendimpl under it
  // End() of a span that records nothing is a no-op, so such spans are not needed later.
  if (p.impl_span != nullptr && !p.impl_span->IsRecording()) p.impl_span.reset();
  if (p.append_span != nullptr && !p.append_span->IsRecording()) p.append_span.reset();
}

void WalImpl::Arrive(const std::shared_ptr<Pending>& p) {
  if (p->arrivals.fetch_add(1, std::memory_order_acq_rel) == 1) {
    OnDurable(p, p->id, p->timetick, std::move(p->durable_status));
  }
}

WalImpl::WalImpl(WalOptions options, std::unique_ptr<WalBackend> backend)
    : options_(std::move(options)),
      backend_(std::move(backend)),
      term_(backend_->term()),
      dedup_(options_.dedup_window_per_producer, /*max_producers=*/65536) {}

WalImpl::~WalImpl() { Close(); }

absl::Status WalImpl::Recover() {
  ASSIGN_OR_RETURN(MessageId start, backend_->TailStart(options_.recovery_scan_bytes));
  ASSIGN_OR_RETURN(auto scanner, backend_->Read({.start = ReadOptions::Start::kFrom, .id = start}));
  TimeTick max_tt;
  // The WAL has no writer yet, so everything durable is already readable: a past deadline
  // returns at once, and DEADLINE_EXCEEDED means "end of log".
  for (;;) {
    auto entry = scanner->Next(absl::InfinitePast());
    if (absl::IsDeadlineExceeded(entry.status())) break;
    if (!entry.ok()) return entry.status();
    auto msg = MutableMessage::Decode(entry->data);
    if (!msg.ok()) {
      return StreamingError(
          StreamingCode::kDataLoss,
          absl::StrCat("pchannel ", options_.pchannel, ": entry ", entry->id.ToText(),
                       " does not decode: ", msg.status().message()));
    }
    auto tt = msg->timetick();
    if (tt && *tt > max_tt) max_tt = *tt;
    if (auto ik = msg->idempotency_key()) {
      if (auto key = ParseIdempotencyKey(*ik); key.ok() && tt) {
        dedup_.Recover(*key,
                       AppendResult{.id = entry->id,
                                    .timetick = *tt,
                                    .last_confirmed = msg->last_confirmed().value_or(entry->id),
                                    .txn = msg->txn()});
      }
    }
  }
  if (max_tt.value() > 0) RETURN_IF_ERROR(options_.tso->Observe(max_tt));
  absl::MutexLock lock(&seq_mu_);
  last_timetick_ = max_tt;
  return absl::OkStatus();
}

void WalImpl::Start() {
  ticker_ = std::jthread([this](std::stop_token st) { TimeTickLoop(st); });
}

absl::Status WalImpl::BeginInFlight() {
  in_flight_.fetch_add(1);
  if (!rejecting_.load()) return absl::OkStatus();
  absl::Status rejection;
  {
    absl::MutexLock lock(&state_mu_);
    rejection = Rejection();
  }
  EndInFlight();
  return rejection;
}

void WalImpl::EndInFlight() {
  if (in_flight_.fetch_sub(1) == 1 && rejecting_.load()) {
    // Close may be waiting for the count to drain; releasing the mutex makes it re-check.
    absl::MutexLock lock(&state_mu_);
  }
}

absl::Status WalImpl::Rejection() const {
  if (!broken_.ok()) return broken_;
  if (closed_) {
    return StreamingError(StreamingCode::kOnShutdown,
                          absl::StrCat("pchannel ", options_.pchannel, " is closing"));
  }
  return absl::OkStatus();
}

void WalImpl::Append(const trace::Context& ctx, MutableMessage msg, AppendResultCallback done) {
  auto p = std::make_shared<Pending>();
  p->wal = this;
  if (auto ik = msg.idempotency_key()) {
    auto key = ParseIdempotencyKey(*ik);
    if (!key.ok()) {
      std::move(done)(key.status());
      return;
    }
    if (dedup_.Begin(*key, done) == IdempotencyTable<AppendResult>::Outcome::kDuplicate) return;
    p->key = std::move(*key);
  }
  absl::Status rejection = BeginInFlight();
  if (rejection.ok()) {
    p->counted = true;
    appends_since_tick_.fetch_add(1, std::memory_order_relaxed);
  } else {
    if (p->key) dedup_.Fail(*p->key, rejection);
    std::move(done)(rejection);
    return;
  }
  p->done = std::move(done);
  p->msg = std::move(msg);
  std::tie(p->append_ctx, p->append_span) = StartSpanForMessage(ctx, &p->msg, "wal.append");
  Persist(std::move(p));
}

void WalImpl::Persist(std::shared_ptr<Pending> p) {
  absl::Duration backoff = options_.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    absl::Status enqueue_status;
    {
      absl::ReleasableMutexLock lock(&seq_mu_);
      auto tt = options_.tso->Allocate(1);
      if (!tt.ok()) {
        enqueue_status = tt.status();
      } else {
        p->msg.set_timetick(*tt);
        p->msg.set_wal_term(term_);
        // Without transactions every message is its own last-confirmed point (SPEC §1).
        p->msg.set_last_confirmed_self();
        auto [impl_ctx, impl_span] = StartSpanForMessage(p->append_ctx, &p->msg, "wal.appendimpl");
        p->impl_span = impl_span;
        // The persisted `_tc` is the last attempt's span (TRACING.md §5).
        OverwriteTraceContext(impl_ctx, &p->msg);
        p->timetick = *tt;
        p->arrivals.store(0, std::memory_order_relaxed);
        auto id = backend_->Append(p->msg.Encode(), [p](absl::Status s) {
          p->durable_status = std::move(s);
          p->wal->Arrive(p);
        });
        if (id.ok()) {
          p->id = *id;
          last_timetick_ = *tt;
          lock.Release();
          ReleaseEnqueued(*p);
          Arrive(p);
          return;
        }
        enqueue_status = id.status();
      }
    }
    // Nothing was enqueued: safe to retry when the failure is transient.
    if (p->impl_span) {
      p->impl_span->RecordError(enqueue_status);
      p->impl_span->End();
    }
    bool retryable =
        absl::IsResourceExhausted(enqueue_status) || absl::IsUnavailable(enqueue_status);
    if (!retryable || attempt >= options_.max_append_attempts) {
      Finish(p, enqueue_status);
      return;
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(500));
  }
}

void WalImpl::OnDurable(const std::shared_ptr<Pending>& p, const MessageId& id, TimeTick tt,
                        absl::Status status) {
  if (p->impl_span) {
    if (!status.ok()) p->impl_span->RecordError(status);
    p->impl_span->End();
  }
  if (!status.ok()) {
    // The entry may or may not be durable. The backend is now unusable (its errors are sticky
    // or it was fenced); the next owner recovers `_ik` state from the log, so the client's
    // retry with the same key is safe.
    absl::Status sticky =
        IsFenced(status)
            ? status
            : StreamingError(StreamingCode::kTransport,
                             absl::StrCat("append may or may not be durable: ", status.message()));
    {
      absl::MutexLock lock(&state_mu_);
      if (broken_.ok()) broken_ = sticky;
      rejecting_.store(true);
    }
    Finish(p, sticky);
    return;
  }
  Finish(p, AppendResult{.id = id, .timetick = tt, .last_confirmed = id, .txn = std::move(p->txn)});
}

void WalImpl::Finish(const std::shared_ptr<Pending>& p, absl::StatusOr<AppendResult> result) {
  if (p->key) {
    if (result.ok()) {
      dedup_.Complete(*p->key, *result);
    } else {
      dedup_.Fail(*p->key, result.status());
    }
  }
  if (p->append_span) {
    if (!result.ok()) p->append_span->RecordError(result.status());
    p->append_span->End();
  }
  if (p->done) std::move(p->done)(std::move(result));
  if (p->counted) EndInFlight();
}

void WalImpl::TimeTickLoop(std::stop_token stop) {
  absl::Mutex wake_mu;
  absl::CondVar wake;
  std::stop_callback on_stop(stop, [&] {
    absl::MutexLock l(&wake_mu);
    wake.SignalAll();
  });
  for (;;) {
    {
      absl::MutexLock l(&wake_mu);
      if (stop.stop_requested()) return;
      wake.WaitWithTimeout(&wake_mu, options_.timetick_interval);
      if (stop.stop_requested()) return;
    }
    if (appends_since_tick_.exchange(0, std::memory_order_relaxed) == 0) continue;
    if (!BeginInFlight().ok()) continue;
    auto p = std::make_shared<Pending>();
    p->wal = this;
    p->msg = NewTimeTickMessage(TimeTick(0));
    p->counted = true;
    Persist(std::move(p));
  }
}

absl::StatusOr<std::unique_ptr<Scanner>> WalImpl::Read(const ScanOptions& options) {
  ReadOptions ro;
  switch (options.policy.kind) {
    case DeliverPolicy::Kind::kAll:
      ro.start = ReadOptions::Start::kEarliest;
      break;
    case DeliverPolicy::Kind::kLatest:
      ro.start = ReadOptions::Start::kLatest;
      break;
    case DeliverPolicy::Kind::kStartFrom:
      ro.start = ReadOptions::Start::kFrom;
      break;
    case DeliverPolicy::Kind::kStartAfter:
      ro.start = ReadOptions::Start::kAfter;
      break;
  }
  ro.id = options.policy.id;
  if ((ro.start == ReadOptions::Start::kFrom || ro.start == ReadOptions::Start::kAfter) &&
      !ro.id.valid()) {
    return StreamingError(StreamingCode::kInvalidArgument, "deliver policy needs a message id");
  }
  ASSIGN_OR_RETURN(auto backend_scanner, backend_->Read(ro));
  return NewCatchupScanner(std::move(backend_scanner), options.vchannel);
}

TimeTick WalImpl::LastTimeTick() const {
  absl::MutexLock lock(&seq_mu_);
  return last_timetick_;
}

void WalImpl::Close() {
  {
    absl::MutexLock lock(&state_mu_);
    if (closed_ && !ticker_.joinable()) return;
    closed_ = true;
    rejecting_.store(true);
  }
  if (ticker_.joinable()) {
    ticker_.request_stop();
    ticker_.join();
  }
  {
    absl::MutexLock lock(&state_mu_);
    state_mu_.Await(absl::Condition(
        +[](std::atomic<int64_t>* n) { return n->load() == 0; }, &in_flight_));
  }
  backend_->Close().IgnoreError();  // every queued callback has run; nothing left to report
}

absl::StatusOr<AppendResult> Wal::AppendSync(const trace::Context& ctx, MutableMessage msg) {
  std::promise<absl::StatusOr<AppendResult>> promise;
  auto future = promise.get_future();
  Append(ctx, std::move(msg),
         [&promise](absl::StatusOr<AppendResult> r) { promise.set_value(std::move(r)); });
  return future.get();
}

absl::StatusOr<std::unique_ptr<Wal>> OpenWal(WalOptions options,
                                             std::unique_ptr<WalBackend> backend) {
  if (options.tso == nullptr) return absl::InvalidArgumentError("WalOptions.tso is required");
  if (options.pchannel.empty()) options.pchannel = std::string(backend->pchannel());
  auto wal = std::make_unique<WalImpl>(std::move(options), std::move(backend));
  RETURN_IF_ERROR(wal->Recover());
  wal->Start();
  return wal;
}

}  // namespace kf::wal
