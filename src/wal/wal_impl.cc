#include "wal/wal_impl.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <limits>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/metrics/registry.h"
#include "common/status_macros.h"
#include "message/builders.h"
#include "message/message_trace.h"
#include "wal/buffer/switchable_scanner.h"
#include "wal/catchup_scanner.h"
#include "wal/delivering_scanner.h"

namespace kf::wal {

// One append travelling through the adaptor. Owned by shared_ptr because the backend callback,
// the commit gate and the retry path all need it. After the backend accepted the entry only
// the callback touches it (the appending thread reads nothing but `id` and `txn_id`).
struct WalImpl::Pending {
  WalImpl* wal;  // the backend callback captures only the shared_ptr (fits AnyInvocable inline)
  Role role = Role::kPlain;
  bool exclusive = false;  // an exclusive message type (fails its vchannel's txns)
  MutableMessage msg;
  AppendResultCallback done;
  std::optional<IdempotencyKey> key;
  std::optional<IdempotencyKey> broadcast_key;    // BroadcastKey: a broadcaster's DDL copy
  CollectionAppend collection;                    // what the collection rules check
  trace::Context append_ctx;                      // wal.append (or the caller's for TimeTick)
  std::shared_ptr<trace::Span> append_span;       // wal.append
  std::shared_ptr<trace::Span> impl_span;         // the current attempt's wal.appendimpl
  bool counted = false;                           // counts toward in_flight_
  TxnId txn_id;                                   // roles kBegin..kRollback
  std::optional<kingfisher::v1::TxnContext> txn;  // for the result (msg may be gone by then)
  bool retain = false;                            // the write-ahead buffer gets the message
  MessageId id;  // the backend id, set while the entry is encoded (before it can be durable)
  TimeTick timetick;
  // The last attempt's stamp: encoded into the entry; applied to the message only when the
  // buffer retains it (after it is durable, off the appending thread).
  AppendStamp stamp;
  // kCommit: the durable callback and the txn's commit gate both arrive; the second finishes.
  std::atomic<int> commit_arrivals{0};
  absl::Status gate_status;
  // The settled result, for whoever finishes the append later (a CommitTxn's second arrival,
  // a Run's end). Not built with a message: a Status with one allocates, and every append
  // builds a Pending.
  absl::StatusOr<AppendResult> result;
  // Wal::Append calls only (not the adaptor's own TimeTicks): reported by Finish.
  bool metered = false;
  WalMetrics::Clock::time_point started;
  uint64_t bytes = 0;  // the encoded entry of the last attempt
};

namespace {

[[noreturn]] void BackendBroke(const std::string& pchannel, const MessageId& encoded,
                               const MessageId& got) {
  std::fprintf(stderr, "FATAL: pchannel %s: backend assigned id %s to the entry it encoded as %s\n",
               pchannel.c_str(), got.ToText().c_str(), encoded.ToText().c_str());
  std::abort();
}

// The result an append of `msg` at `id` returned, as recovered from the log.
AppendResult RecoveredResult(const MessageId& id, TimeTick tt, const MutableMessage& msg) {
  return AppendResult{.id = id,
                      .timetick = tt,
                      .last_confirmed = msg.last_confirmed().value_or(id),
                      .txn = msg.txn()};
}

}  // namespace

WalImpl::WalImpl(WalOptions options, std::unique_ptr<WalBackend> backend)
    : options_(std::move(options)),
      backend_(std::move(backend)),
      term_(backend_->term()),
      metrics_(options_.metrics != nullptr ? *options_.metrics : metrics::DefaultRegistry(),
               options_.pchannel),
      dedup_(options_.dedup_window_per_producer, /*max_producers=*/65536),
      // Never evicts a vchannel: a forgotten broadcast would be refused, not deduplicated.
      broadcasts_(kBroadcastWindow, /*max_producers=*/std::numeric_limits<size_t>::max()),
      txns_(options_.txn) {}

WalImpl::~WalImpl() { Close(); }

absl::Status WalImpl::Recover() {
  ASSIGN_OR_RETURN(MessageId tail, backend_->TailStart(options_.recovery_scan_bytes));
  // One pass over the whole log: every DDL rebuilds the collection state and the broadcast
  // dedupe (a collection may have been created long ago); the tail, from `tail`, the last
  // timetick and the `_ik` state. Entries before the tail are filtered by type without being
  // decoded. A recovery checkpoint of the collection state will bound this (docs/semantics.md §6).
  ASSIGN_OR_RETURN(auto scanner, backend_->Read({.start = ReadOptions::Start::kEarliest}));
  TimeTick max_tt;
  std::optional<MessageId> last_id;
  CollectionTable collections;
  // The WAL has no writer yet, so everything durable is already readable: a past deadline
  // returns at once, and DEADLINE_EXCEEDED means "end of log".
  for (;;) {
    auto entry = scanner->Next(absl::InfinitePast());
    if (absl::IsDeadlineExceeded(entry.status())) break;
    if (!entry.ok()) return entry.status();
    last_id = entry->id;
    const bool in_tail = !(entry->id < tail);
    if (!in_tail && !IsExclusiveType(MutableMessage::DecodeType(entry->data))) continue;
    auto msg = MutableMessage::Decode(entry->data);
    if (!msg.ok()) {
      return StreamingError(
          StreamingCode::kDataLoss,
          absl::StrCat("pchannel ", options_.pchannel, ": entry ", entry->id.ToText(),
                       " does not decode: ", msg.status().message()));
    }
    auto tt = msg->timetick();
    if (IsExclusiveType(msg->type())) {
      collections.Replay(*msg);
      if (auto key = BroadcastKey(*msg); key && tt) {
        broadcasts_.Recover(*key, RecoveredResult(entry->id, *tt, *msg));
      }
    }
    if (!in_tail) continue;
    if (tt && *tt > max_tt) max_tt = *tt;
    if (auto ik = msg->idempotency_key()) {
      if (auto key = ParseIdempotencyKey(*ik); key.ok() && tt) {
        dedup_.Recover(*key, RecoveredResult(entry->id, *tt, *msg));
      }
    }
  }
  if (max_tt.value() > 0) RETURN_IF_ERROR(options_.tso->Observe(max_tt));
  txns_.SetOpenedAfter(max_tt);
  WriteAheadBufferOptions buffer_options = options_.buffer;
  // An empty log: the buffer will hold it from its very beginning.
  buffer_options.starts_after = last_id.value_or(MessageId());
  buffer_ = WriteAheadBuffer::Create(std::move(buffer_options));
  absl::MutexLock lock(&seq_mu_);
  last_timetick_ = max_tt;
  last_id_ = last_id;
  collections_ = std::move(collections);
  return absl::OkStatus();
}

void WalImpl::Start() {
  ticker_ = std::jthread([this](std::stop_token st) { TimeTickLoop(st); });
}

absl::Status WalImpl::BeginInFlight(int64_t n) {
  in_flight_.fetch_add(n);
  if (!rejecting_.load()) return absl::OkStatus();
  absl::Status rejection;
  {
    absl::MutexLock lock(&state_mu_);
    rejection = Rejection();
  }
  EndInFlight(n);
  return rejection;
}

void WalImpl::EndInFlight(int64_t n) {
  if (n > 0 && in_flight_.fetch_sub(n) == n && rejecting_.load()) {
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
  const MessageType type = msg.type();
  if (auto p = Prepare(std::move(msg), std::move(done), type, WalMetrics::Clock::now())) {
    AppendAlone(ctx, std::move(p));
  }
}

void WalImpl::AppendAlone(const trace::Context& ctx, std::shared_ptr<Pending> p) {
  if (p->key && Deduplicated(*p, dedup_.Begin(*p->key, p->done))) return;
  if (Enter(ctx, *p)) Persist(std::move(p));
}

void WalImpl::AppendBatch(std::vector<AppendRequest> requests) {
  const WalMetrics::Clock::time_point started = WalMetrics::Clock::now();
  // Ordinary messages gather into a run; anything else is appended alone, in its place.
  std::vector<std::pair<std::shared_ptr<Pending>, const trace::Context*>> run;
  for (AppendRequest& r : requests) {
    const MessageType type = r.msg.type();
    auto p = Prepare(std::move(r.msg), std::move(r.done), type, started);
    if (p == nullptr) continue;
    if (p->role == Role::kPlain && !p->exclusive) {
      run.emplace_back(std::move(p), &r.ctx);
      continue;
    }
    AppendRun(std::exchange(run, {}));
    AppendAlone(r.ctx, std::move(p));
  }
  AppendRun(std::move(run));
}

void WalImpl::AppendRun(
    std::vector<std::pair<std::shared_ptr<Pending>, const trace::Context*>> run) {
  // AppendAlone's steps for each, with one lock of the `_ik` table for all.
  using Table = IdempotencyTable<AppendResult>;
  std::vector<Table::Begun> begun;
  begun.reserve(run.size());
  for (auto& [p, ctx] : run) {
    if (p->key) begun.push_back({.key = &*p->key, .waiter = &p->done});
  }
  dedup_.BeginAll(std::span(begun));
  // The duplicates drop out; the rest keep their order.
  size_t next_begun = 0;
  std::erase_if(run, [&](const auto& entry) {
    const std::shared_ptr<Pending>& p = entry.first;
    return p->key && Deduplicated(*p, begun[next_begun++].outcome);
  });
  std::vector<std::shared_ptr<Pending>> admitted;
  admitted.reserve(run.size());
  // Counted in in_flight_ at once: the completions write the same cache line.
  absl::Status rejection = BeginInFlight(static_cast<int64_t>(run.size()));
  for (auto& [p, ctx] : run) {
    if (!rejection.ok()) {
      Reject(*p, rejection);
      continue;
    }
    Entered(*ctx, *p);
    admitted.push_back(std::move(p));
  }
  PersistRun(std::move(admitted));
}

std::shared_ptr<WalImpl::Pending> WalImpl::Prepare(MutableMessage msg, AppendResultCallback done,
                                                   MessageType type,
                                                   WalMetrics::Clock::time_point started) {
  auto reject = [&](absl::Status bad) {
    metrics_.AppendFinished(bad, started, started, 0);
    std::move(done)(std::move(bad));
    return nullptr;
  };
  auto p = std::make_shared<Pending>();
  p->wal = this;
  p->metered = true;
  p->started = started;
  p->exclusive = IsExclusiveType(type);
  if (type == MessageType::kTimeTick) {
    p->role = Role::kTimeTick;
  } else if (type == MessageType::kBeginTxn) {
    p->role = Role::kBegin;
  } else if (IsTxnControlType(type) || msg.HasProperty(prop::kTxn)) {
    auto txn = msg.txn();
    if (!txn) {
      return reject(StreamingError(StreamingCode::kInvalidArgument,
                                   absl::StrCat(ToAbsl(MessageTypeName(type)),
                                                " needs a decodable transaction context `_tx`")));
    }
    p->role = type == MessageType::kCommitTxn     ? Role::kCommit
              : type == MessageType::kRollbackTxn ? Role::kRollback
                                                  : Role::kBody;
    p->txn_id = TxnId(txn->txn_id());
  }
  if (absl::Status bad = CollectionTable::Prepare(msg, &p->collection); !bad.ok()) {
    return reject(std::move(bad));
  }
  // A broadcast retry is answered before the `_ik` check: a duplicate leaves no `_ik` state
  // behind, and a retry under the same `_ik` comes back here.
  if (auto key = p->exclusive ? BroadcastKey(msg) : std::nullopt) {
    if (broadcasts_.Begin(*key, done) == IdempotencyTable<AppendResult>::Outcome::kDuplicate) {
      metrics_.Deduplicated();
      return nullptr;
    }
    p->broadcast_key = std::move(*key);
  }
  if (auto ik = msg.idempotency_key()) {
    auto key = ParseIdempotencyKey(*ik);
    if (!key.ok()) {
      if (p->broadcast_key) broadcasts_.Fail(*p->broadcast_key, key.status());
      return reject(key.status());
    }
    p->key = std::move(*key);
  }
  p->done = std::move(done);
  p->msg = std::move(msg);
  return p;
}

bool WalImpl::Deduplicated(Pending& p, IdempotencyTable<AppendResult>::Outcome outcome) {
  if (outcome != IdempotencyTable<AppendResult>::Outcome::kDuplicate) return false;
  // The original holds the broadcast key too (same message): this copy lets it go.
  if (p.broadcast_key) {
    broadcasts_.Fail(*p.broadcast_key, absl::AbortedError("duplicate of an `_ik` append"));
  }
  metrics_.Deduplicated();
  return true;
}

bool WalImpl::Enter(const trace::Context& ctx, Pending& p) {
  if (absl::Status rejection = BeginInFlight(1); !rejection.ok()) {
    Reject(p, rejection);
    return false;
  }
  Entered(ctx, p);
  return true;
}

void WalImpl::Reject(Pending& p, const absl::Status& rejection) {
  if (p.key) dedup_.Fail(*p.key, rejection);
  if (p.broadcast_key) broadcasts_.Fail(*p.broadcast_key, rejection);
  metrics_.AppendFinished(rejection, p.started, p.started, 0);
  std::move(p.done)(rejection);
}

void WalImpl::Entered(const trace::Context& ctx, Pending& p) {
  p.counted = true;
  appends_since_tick_.fetch_add(1, std::memory_order_relaxed);
  std::tie(p.append_ctx, p.append_span) = StartSpanForMessage(ctx, &p.msg, "wal.append");
}

absl::Status WalImpl::Intercept(const std::shared_ptr<Pending>& p, TimeTick tt) {
  // A view into the `_vc` property: dangles once the properties change (kBegin's set_txn below
  // inserts `_tx`, which moves later entries), so it is not used after that.
  const std::string_view vchannel = p->msg.vchannel();
  // First, so that a rejected message neither joins a txn nor fails the vchannel's txns.
  RETURN_IF_ERROR(collections_.Admit(vchannel, p->collection));
  switch (p->role) {
    case Role::kPlain:
      if (p->exclusive) txns_.FailVChannel(vchannel);
      return absl::OkStatus();
    case Role::kTimeTick:
      txns_.ObserveWatermark(tt);
      return absl::OkStatus();
    case Role::kBegin: {
      auto requested = p->msg.txn();
      ASSIGN_OR_RETURN(kingfisher::v1::TxnContext txn,
                       txns_.BeginTxn(vchannel, requested ? requested->keepalive_ms() : 0, tt));
      p->txn_id = TxnId(txn.txn_id());
      p->msg.set_txn(txn);
      return absl::OkStatus();
    }
    case Role::kBody:
      return txns_.AddBody(p->txn_id, vchannel, tt);
    case Role::kCommit:
      // The gate may fire inside Commit (nothing in flight): it only records its arrival then,
      // as the durable callback cannot have run before the enqueue below.
      return txns_.Commit(p->txn_id, vchannel, tt, [p](absl::Status s) {
        p->gate_status = std::move(s);
        p->wal->ArriveCommit(p);
      });
    case Role::kRollback:
      return txns_.Rollback(p->txn_id, vchannel, tt);
  }
  return absl::OkStatus();
}

void WalImpl::AbandonIntercepted(Pending& p, const absl::Status& cause) {
  switch (p.role) {
    case Role::kBody:
      txns_.BodyFailed(p.txn_id, cause);
      break;
    case Role::kBegin:
    case Role::kCommit:
    case Role::kRollback:
      txns_.FailTxn(p.txn_id, cause);
      break;
    case Role::kPlain:
    case Role::kTimeTick:
      break;  // nothing admitted (a failed exclusive message still failed its txns: harmless)
  }
}

void WalImpl::StampAttempt(Pending& p, TimeTick tt, const std::optional<MessageId>& lcmid) {
  p.timetick = tt;
  p.stamp = AppendStamp{.timetick = tt, .term = term_, .last_confirmed = lcmid};
  // The persisted `_tc` is the last attempt's span (docs/tracing.md §5).
  p.impl_span = StartSpanForStampedMessage(p.append_ctx, p.msg, "wal.appendimpl", &p.stamp).second;
}

void WalImpl::EndFailedAttempt(Pending& p, const absl::Status& status) {
  if (!p.impl_span) return;
  p.impl_span->RecordError(status);
  p.impl_span->End();
  p.impl_span.reset();
}

namespace {

// docs/semantics.md §1: reading from the LCMID must yield every later message, so it is the Begin
// of the oldest open transaction (its later messages are still to come); nullopt: the message.
std::optional<MessageId> Lcmid(const TxnManager& txns, const MessageId& id) {
  if (auto begin = txns.EarliestActiveBegin(); begin && begin->id < id) return begin->id;
  return std::nullopt;
}

}  // namespace

absl::StatusOr<MessageId> WalImpl::Enqueue(Pending& p, const MutableMessage& msg,
                                           AppendCallback done) {
  not_durable_.fetch_add(1, std::memory_order_relaxed);
  // Encoded straight into the backend's queue; runs before the entry can become durable, so
  // the callback cannot race it for p.
  auto id = backend_->AppendEncoded(
      [&](const MessageId& entry_id, std::string* out) {
        p.id = entry_id;
        const size_t before = out->size();
        msg.EncodeTo(out, p.stamp);
        p.bytes = out->size() - before;
      },
      std::move(done));
  if (!id.ok()) {
    not_durable_.fetch_sub(1, std::memory_order_relaxed);
  } else if (*id != p.id) {
    BackendBroke(options_.pchannel, p.id, *id);
  }
  return id;
}

void WalImpl::Persist(std::shared_ptr<Pending> p) {
  absl::Duration backoff = options_.initial_backoff;
  for (int attempt = 1;; ++attempt) {
    absl::Status enqueue_status;
    bool intercepted = false;
    {
      MutableMessage released;  // declared first: destroyed after the lock is released
      absl::ReleasableMutexLock lock(&seq_mu_);
      auto tt = options_.tso->Allocate(1);
      if (!tt.ok()) {
        enqueue_status = tt.status();
      } else if (absl::Status admitted = Intercept(p, *tt); !admitted.ok()) {
        lock.Release();
        Finish(p, admitted);  // rejected by a rule, not by the backend: never retried
        return;
      } else {
        intercepted = true;
        StampAttempt(*p, *tt, Lcmid(txns_, backend_->NextId()));
        if (p->role != Role::kPlain && p->role != Role::kTimeTick) p->txn = p->msg.txn();
        // Not retained: freed here, on the thread that allocated it, after the enqueue (frees
        // on the callback thread contend for this thread's malloc arena).
        p->retain = readers_.load(std::memory_order_acquire) > 0;
        if (!p->retain) released = std::move(p->msg);
        const MutableMessage& msg = p->retain ? p->msg : released;
        // Taken out of p: the callback owns p once the backend has the entry.
        std::optional<CollectionAppend> ddl;
        if (p->collection.kind == CollectionAppend::Kind::kDdl) ddl = std::move(p->collection);
        auto id = Enqueue(*p, msg, [p](absl::Status s) { p->wal->OnDurable(p, std::move(s)); });
        if (!id.ok()) {  // for the retry
          if (!p->retain) p->msg = std::move(released);
          if (ddl) p->collection = *std::move(ddl);
        }
        if (id.ok()) {
          // From here the callback owns p (it may already have run).
          // Under the lock that orders appends: every later append sees the DDL's effect. If
          // the entry then fails to become durable the WAL is broken and appends nothing more.
          if (ddl) collections_.Apply(*ddl);
          if (p->role == Role::kBegin) txns_.SetBeginId(p->txn_id, *id);
          last_timetick_ = *tt;
          last_id_ = *id;
          return;
        }
        enqueue_status = id.status();
      }
    }
    // Nothing was enqueued.
    EndFailedAttempt(*p, enqueue_status);
    if (intercepted) AbandonIntercepted(*p, enqueue_status);
    // A transient failure is retried, except inside a transaction: its admission cannot be
    // replayed at a new timetick, so the txn failed above and the client retries it whole.
    bool retryable =
        (p->role == Role::kPlain || p->role == Role::kTimeTick) &&
        (absl::IsResourceExhausted(enqueue_status) || absl::IsUnavailable(enqueue_status));
    if (!retryable || attempt >= options_.max_append_attempts) {
      Finish(p, enqueue_status);
      return;
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Milliseconds(500));
  }
}

// A run of AppendBatch: ordinary messages enqueued under one hold of the sequencer. Each
// entry's callback settles its message in WAL order; the last of them (or the appending
// thread, if every callback came first) finishes them all, and deletes the run.
struct WalImpl::Run {
  WalImpl* wal;
  std::vector<std::shared_ptr<Pending>> items;  // the enqueued ones, in WAL order
  // Callbacks still to come, plus one the appending thread holds until it knows `items`.
  std::atomic<size_t> outstanding{0};
};

void WalImpl::PersistRun(std::vector<std::shared_ptr<Pending>> items) {
  if (items.size() <= 1) {
    if (!items.empty()) Persist(std::move(items[0]));
    return;
  }
  const size_t n = items.size();
  auto* run = new Run{.wal = this};
  run->items.reserve(n);
  run->outstanding.store(n + 1, std::memory_order_relaxed);
  std::vector<std::shared_ptr<Pending>> rejected;  // by a rule: answered after the lock
  std::vector<std::shared_ptr<Pending>> unsent;    // the backend refused: retried alone
  absl::Status enqueue_status;
  {
    std::vector<MutableMessage> released;  // declared first: destroyed after the lock
    released.reserve(n);                   // (the encoder reads its last element)
    absl::MutexLock lock(&seq_mu_);
    auto first = options_.tso->Allocate(static_cast<uint32_t>(n));
    if (!first.ok()) enqueue_status = first.status();
    // Nothing in a run opens or closes a txn: one LCMID and one retention hold for all of it.
    const std::optional<MessageId> lcmid =
        first.ok() ? Lcmid(txns_, backend_->NextId()) : std::nullopt;
    const bool retain = readers_.load(std::memory_order_acquire) > 0;
    for (size_t i = 0; i < n; ++i) {
      std::shared_ptr<Pending>& p = items[i];
      if (!enqueue_status.ok()) {
        unsent.push_back(std::move(p));
        continue;
      }
      const TimeTick tt(first->value() + i);
      if (absl::Status admitted = Intercept(p, tt); !admitted.ok()) {
        p->result = std::move(admitted);
        rejected.push_back(std::move(p));
        continue;
      }
      StampAttempt(*p, tt, lcmid);
      p->retain = retain;
      if (!retain) released.push_back(std::move(p->msg));
      const MutableMessage& msg = retain ? p->msg : released.back();
      // `p` stays alive: the run is finished only after this thread lets go of it.
      auto id = Enqueue(*p, msg, [run, entry = p.get()](absl::Status s) {
        run->wal->OnRunEntryDurable(run, *entry, std::move(s));
      });
      if (!id.ok()) {
        if (!retain) p->msg = std::move(released.back());
        enqueue_status = id.status();
        unsent.push_back(std::move(p));
        continue;
      }
      last_timetick_ = tt;
      last_id_ = *id;
      run->items.push_back(std::move(p));
    }
  }
  ReleaseRun(run, n + 1 - run->items.size());
  for (auto& p : rejected) Finish(p, std::move(p->result));
  for (auto& p : unsent) {
    EndFailedAttempt(*p, enqueue_status);
    Persist(std::move(p));  // with a single append's retries and backoff
  }
}

void WalImpl::OnRunEntryDurable(Run* run, Pending& p, absl::Status status) {
  p.result = Settle(p, std::move(status));
  ReleaseRun(run, 1);
}

void WalImpl::ReleaseRun(Run* run, size_t count) {
  if (run->outstanding.fetch_sub(count, std::memory_order_acq_rel) != count) return;
  std::unique_ptr<Run> owned(run);
  // One lock of the `_ik` table and one clock read for the whole run.
  std::vector<IdempotencyTable<AppendResult>::Finished> settled;
  settled.reserve(run->items.size());
  for (auto& p : run->items) {
    if (p->key) settled.push_back({&*p->key, &p->result});
  }
  run->wal->dedup_.FinishAll(std::span(settled));
  const WalMetrics::Clock::time_point now = WalMetrics::Clock::now();
  for (auto& p : run->items) run->wal->Answer(*p, std::move(p->result), now);
  // Counted at once, as they were (every item of a run is).
  run->wal->not_durable_.fetch_sub(static_cast<int64_t>(run->items.size()),
                                   std::memory_order_release);
  run->wal->EndInFlight(static_cast<int64_t>(run->items.size()));
}

absl::Status WalImpl::Health() const {
  absl::MutexLock lock(&state_mu_);
  return broken_;
}

void WalImpl::OnDurable(const std::shared_ptr<Pending>& p, absl::Status status) {
  absl::StatusOr<AppendResult> result = Settle(*p, std::move(status));
  not_durable_.fetch_sub(1, std::memory_order_release);
  if (p->role == Role::kCommit) {
    p->result = std::move(result);
    ArriveCommit(p);
    return;
  }
  Finish(p, std::move(result));
}

absl::StatusOr<AppendResult> WalImpl::Settle(Pending& p, absl::Status status) {
  if (p.impl_span) {
    if (!status.ok()) p.impl_span->RecordError(status);
    p.impl_span->End();
    p.impl_span.reset();
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
    AbandonIntercepted(p, sticky);
    return sticky;
  }
  AppendResult result{.id = p.id,
                      .timetick = p.timetick,
                      .last_confirmed = p.stamp.last_confirmed.value_or(p.id),
                      .txn = std::move(p.txn)};
  // Callbacks run in WAL order, so the buffer receives every durable message in order.
  // A rejection (closed buffer) only means no tailing reader will see it.
  if (p.retain) {
    p.msg.Stamp(p.stamp);  // now as persisted
    buffer_->Append(std::make_shared<const ImmutableMessage>(p.id, std::move(p.msg))).IgnoreError();
  } else {
    buffer_->Skip(p.id, p.timetick);  // the buffer covers only what follows
  }
  if (p.role == Role::kBody) txns_.BodyDurable(p.txn_id);
  return result;
}

void WalImpl::ArriveCommit(const std::shared_ptr<Pending>& p) {
  if (p->commit_arrivals.fetch_add(1, std::memory_order_acq_rel) != 1) return;
  if (!p->gate_status.ok() && p->result.ok()) {
    Finish(p, p->gate_status);
  } else {
    Finish(p, std::move(p->result));
  }
}

void WalImpl::Finish(const std::shared_ptr<Pending>& p, absl::StatusOr<AppendResult> result) {
  if (p->key) {
    const IdempotencyTable<AppendResult>::Finished settled{&*p->key, &result};
    dedup_.FinishAll(std::span(&settled, 1));
  }
  Answer(*p, std::move(result), WalMetrics::Clock::now());
  if (p->counted) EndInFlight(1);
}

void WalImpl::Answer(Pending& p, absl::StatusOr<AppendResult> result,
                     WalMetrics::Clock::time_point now) {
  if (p.broadcast_key) {
    if (result.ok()) {
      broadcasts_.Complete(*p.broadcast_key, *result);
    } else {
      broadcasts_.Fail(*p.broadcast_key, result.status());
    }
  }
  if (p.append_span) {
    if (!result.ok()) p.append_span->RecordError(result.status());
    p.append_span->End();
  }
  // Before the callback: whoever sees the ack also sees it counted.
  if (p.metered) metrics_.AppendFinished(result.status(), p.started, now, p.bytes);
  if (p.done) std::move(p.done)(std::move(result));
}

void WalImpl::SyncTimeTick() {
  if (appends_since_tick_.exchange(0, std::memory_order_relaxed) != 0) {
    if (!BeginInFlight(1).ok()) return;
    auto p = std::make_shared<Pending>();
    p->wal = this;
    p->role = Role::kTimeTick;
    p->msg = NewTimeTickMessage(TimeTick(0));
    p->counted = true;
    Persist(std::move(p));
    return;
  }
  // Idle: a non-persisted tick advances tailing readers and expires abandoned transactions.
  // It carries the last entry's id, so it may enter the buffer only once that entry is there.
  absl::MutexLock lock(&seq_mu_);
  if (!last_id_ || not_durable_.load(std::memory_order_acquire) != 0) return;
  auto tt = options_.tso->Allocate(1);
  if (!tt.ok()) return;  // the next round tries again
  txns_.ObserveWatermark(*tt);
  last_timetick_ = *tt;
  if (readers_.load(std::memory_order_acquire) == 0) return;  // nobody to advance
  MutableMessage tick = NewTimeTickMessage(*tt);
  tick.set_wal_term(term_);
  tick.set_not_persisted();
  if (auto begin = txns_.EarliestActiveBegin()) {
    tick.set_last_confirmed(begin->id);
  } else {
    tick.set_last_confirmed(*last_id_);
  }
  buffer_->Append(std::make_shared<const ImmutableMessage>(*last_id_, std::move(tick)))
      .IgnoreError();
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
    SyncTimeTick();
    buffer_->EvictExpired();
  }
}

namespace {

// Counts itself in the Wal's live readers while it exists, and what it returns by the mode
// the raw scanner was in when it returned it.
class CountedScanner final : public Scanner {
 public:
  CountedScanner(std::unique_ptr<Scanner> inner, std::atomic<int>* readers,
                 const SwitchableScanner* raw, const WalMetrics* metrics)
      : inner_(std::move(inner)), readers_(readers), raw_(raw), metrics_(metrics) {}
  ~CountedScanner() override { readers_->fetch_sub(1, std::memory_order_acq_rel); }

  absl::StatusOr<ImmutableMessagePtr> Next(const trace::Context& ctx,
                                           absl::Time deadline) override {
    absl::StatusOr<ImmutableMessagePtr> m = inner_->Next(ctx, deadline);
    if (m.ok() && *m != nullptr) {
      (raw_->mode() == ScanMode::kTailing ? metrics_->read_tailing() : metrics_->read_catchup())
          ->Inc();
    }
    return m;
  }
  bool tailing() const override { return inner_->tailing(); }
  bool NotifyWhenReadable(absl::AnyInvocable<void() &&> wake) override {
    return inner_->NotifyWhenReadable(std::move(wake));
  }

 private:
  std::unique_ptr<Scanner> inner_;
  std::atomic<int>* readers_;
  const SwitchableScanner* raw_;  // owned by inner_'s chain
  const WalMetrics* metrics_;     // the Wal's, which outlives its scanners
};

}  // namespace

absl::StatusOr<std::unique_ptr<Scanner>> WalImpl::Read(const ScanOptions& options) {
  // Counted before the scanner looks at the buffer: from the next enqueue on, messages are
  // retained; any skipped before shows up as a gap the scanner falls back over.
  readers_.fetch_add(1, std::memory_order_acq_rel);
  struct Uncount {
    std::atomic<int>* n;
    ~Uncount() {
      if (n) n->fetch_sub(1, std::memory_order_acq_rel);
    }
  } uncount{&readers_};
  SwitchableScannerOptions so;
  so.buffer = buffer_;
  so.vchannel = options.vchannel;
  switch (options.policy.kind) {
    case DeliverPolicy::Kind::kAll:
      break;  // an invalid start id: catch-up from the earliest entry
    case DeliverPolicy::Kind::kLatest: {
      absl::MutexLock lock(&seq_mu_);
      if (last_id_) {
        so.start = *last_id_;
        so.start_after = true;
      }
      break;
    }
    case DeliverPolicy::Kind::kStartFrom:
    case DeliverPolicy::Kind::kStartAfter:
      if (!options.policy.id.valid()) {
        return StreamingError(StreamingCode::kInvalidArgument, "deliver policy needs a message id");
      }
      so.start = options.policy.id;
      so.start_after = options.policy.kind == DeliverPolicy::Kind::kStartAfter;
      break;
  }
  so.open_catchup = [backend = backend_.get(), vchannel = options.vchannel](
                        const MessageId& start) -> absl::StatusOr<std::unique_ptr<Scanner>> {
    ReadOptions ro;
    ro.start = start.valid() ? ReadOptions::Start::kFrom : ReadOptions::Start::kEarliest;
    ro.id = start;
    ASSIGN_OR_RETURN(auto backend_scanner, backend->Read(ro));
    return NewCatchupScanner(std::move(backend_scanner), vchannel);
  };
  uncount.n = nullptr;  // the scanner owns the count from here
  auto raw = std::make_unique<SwitchableScanner>(std::move(so));
  const SwitchableScanner* raw_view = raw.get();
  return std::make_unique<CountedScanner>(
      std::make_unique<DeliveringScanner>(std::move(raw), options.filter, options_.txn_buffer),
      &readers_, raw_view, &metrics_);
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
  if (buffer_) buffer_->Close();    // wakes tailing readers with ON_SHUTDOWN
}

void Wal::AppendBatch(std::vector<AppendRequest> requests) {
  for (AppendRequest& r : requests) Append(r.ctx, std::move(r.msg), std::move(r.done));
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
