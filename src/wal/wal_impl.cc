#include "wal/wal_impl.h"

#include <future>
#include <utility>

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
#include "wal/recovery.h"

namespace kf::wal {

WalImpl::WalImpl(WalOptions options, std::unique_ptr<WalBackend> backend,
                 std::vector<AppendInterceptor*> extra)
    : options_(std::move(options)),
      backend_(std::move(backend)),
      term_(backend_->term()),
      metrics_(options_.metrics != nullptr ? *options_.metrics : metrics::DefaultRegistry(),
               options_.pchannel),
      txns_(options_.txn),
      admission_(options_.pchannel),
      completion_(&chain_, &metrics_, &admission_),
      sequencer_({.pchannel = options_.pchannel,
                  .term = term_,
                  .tso = options_.tso,
                  .max_append_attempts = options_.max_append_attempts,
                  .initial_backoff = options_.initial_backoff},
                 backend_.get(), &chain_, &completion_, &txns_, &readers_),
      replicates_(sequencer_.mutex(), options_.cluster_id),
      collections_(sequencer_.mutex(), options_.admit_inserts),
      txn_rules_(&txns_),
      idempotency_(options_.dedup_window_per_producer),
      timeticks_(&txns_) {
  // The order is the hooks' order (interceptor.h): the replicate rules first, so that what
  // they refuse touched nothing else; the collection rules before the txn
  // manager, so that a rejected message neither joins a txn nor fails the vchannel's txns; the
  // broadcast deduplication before the `_ik` one, so that a broadcast duplicate leaves no `_ik`
  // state; the TimeTick logic last, so that its traffic is what passed the others' Admit.
  chain_.Add(&replicates_);
  chain_.Add(&collections_);
  chain_.Add(&txn_rules_);
  chain_.Add(&broadcasts_);
  chain_.Add(&idempotency_);
  chain_.Add(&timeticks_);
  for (AppendInterceptor* i : extra) chain_.Add(i);
}

WalImpl::~WalImpl() { Close(); }

absl::Status WalImpl::Recover() {
  std::optional<kingfisher::v1::WalState> checkpoint;
  if (options_.load_checkpoint) {
    ASSIGN_OR_RETURN(checkpoint, options_.load_checkpoint(options_.pchannel));
  }
  ASSIGN_OR_RETURN(
      RecoveredState state,
      RecoverWal(*backend_, {.pchannel = options_.pchannel,
                             .cluster_id = options_.cluster_id,
                             .tail_bytes = options_.recovery_scan_bytes,
                             .dedup_window_per_producer = options_.dedup_window_per_producer,
                             .checkpoint = checkpoint ? &*checkpoint : nullptr}));
  if (state.last_timetick.value() > 0) RETURN_IF_ERROR(options_.tso->Observe(state.last_timetick));
  txns_.SetOpenedAfter(state.last_timetick);
  WriteAheadBufferOptions buffer_options = options_.buffer;
  // An empty log: the buffer will hold it from its very beginning.
  buffer_options.starts_after = state.last_id.value_or(MessageId());
  buffer_ = WriteAheadBuffer::Create(std::move(buffer_options));
  completion_.set_buffer(buffer_);
  replicates_.Restore(std::move(state.replicate), state.last_timetick);
  collections_.Restore(std::move(state.collections));
  broadcasts_.Restore(std::move(state.broadcasts));
  idempotency_.Restore(std::move(state.idempotency));
  sequencer_.Restore(state.last_timetick, state.last_id);
  return absl::OkStatus();
}

void WalImpl::HoldForReplication(const std::string& secondary, std::optional<MessageId> from) {
  absl::MutexLock lock(&holds_mu_);
  holds_[secondary] = from;
}

absl::StatusOr<MessageId> WalImpl::TruncateBefore(const MessageId& requested) {
  MessageId keep = requested;
  const kingfisher::v1::WalReplicateState state = replicates_.replicate_state();
  std::vector<std::string> secondaries;  // those this pchannel replicates to, or hands over to
  for (const auto& e : state.config().topology()) {
    if (e.source_cluster_id() == options_.cluster_id) secondaries.push_back(e.target_cluster_id());
  }
  for (const auto& h : state.handovers()) secondaries.push_back(h.target_cluster_id());
  {
    absl::MutexLock lock(&holds_mu_);
    for (const std::string& secondary : secondaries) {
      auto it = holds_.find(secondary);
      if (it == holds_.end()) return MessageId();  // not reported on yet: all of it is held
      if (!it->second.has_value()) continue;       // released
      if (!it->second->valid()) return MessageId();
      if (*it->second < keep) keep = *it->second;
    }
  }
  // The backend reclaims up to and including an id: the one before `keep`. Every backend's ids
  // are (segment, entry) with entries counted within a segment (the local one: segment 0), so
  // the entry before is entry - 1; at an entry 0 of a later segment, what lies before it is
  // left for the next truncation.
  if (!keep.valid() || keep.entry() == 0) return MessageId();
  RETURN_IF_ERROR(backend_->Truncate(MessageId(keep.kind(), keep.segment(), keep.entry() - 1)));
  return keep;
}

void WalImpl::Start() {
  ticker_ = std::jthread([this](std::stop_token st) { TimeTickLoop(st); });
}

absl::Status WalImpl::Classify(MessageType type, AppendContext& a) {
  a.exclusive = IsExclusiveType(type);
  if (type == MessageType::kTimeTick) {
    a.role = AppendRole::kTimeTick;
  } else if (type == MessageType::kBeginTxn) {
    a.role = AppendRole::kBegin;
  } else if (IsTxnControlType(type) || a.msg.HasProperty(prop::kTxn)) {
    auto txn = a.msg.txn();
    if (!txn) {
      return StreamingError(StreamingCode::kInvalidArgument,
                            absl::StrCat(ToAbsl(MessageTypeName(type)),
                                         " needs a decodable transaction context `_tx`"));
    }
    a.role = type == MessageType::kCommitTxn     ? AppendRole::kCommit
             : type == MessageType::kRollbackTxn ? AppendRole::kRollback
                                                 : AppendRole::kBody;
    a.txn_id = TxnId(txn->txn_id());
  }
  return absl::OkStatus();
}

void WalImpl::Append(const trace::Context& ctx, MutableMessage msg, AppendResultCallback done) {
  const MessageType type = msg.type();
  AppendOne(ctx, std::move(msg), std::move(done), type, WalMetrics::Clock::now());
}

void WalImpl::AppendOne(const trace::Context& ctx, MutableMessage&& msg,
                        AppendResultCallback&& done, MessageType type,
                        WalMetrics::Clock::time_point started) {
  RunRef run = Run::Create(&completion_, 1);
  AppendContext& a = (*run)[0];
  a.msg = std::move(msg);
  a.done = std::move(done);
  a.caller = &ctx;
  a.metered = true;
  a.started = started;
  if (absl::Status bad = Classify(type, a); !bad.ok()) {
    a.Reject(std::move(bad));
    a.admit_stop = 0;  // before the chain: no interceptor admitted it
    AppendContext* const rejected = &a;
    completion_.FinishNow(std::span(&rejected, 1));
    return;
  }
  Submit(std::move(run));
}

namespace {

// What AppendBatch passes through the sequencer in runs: messages whose hooks change no
// transaction or collection state (so one LCMID holds for a whole run).
bool Ordinary(MessageType type, const MutableMessage& msg) {
  return type != MessageType::kTimeTick && type != MessageType::kBeginTxn &&
         !IsTxnControlType(type) && !IsExclusiveType(type) && !msg.HasProperty(prop::kTxn);
}

}  // namespace

void WalImpl::AppendBatch(std::vector<AppendRequest> requests) {
  const WalMetrics::Clock::time_point started = WalMetrics::Clock::now();
  // Ordinary messages gather into a run; anything else is appended alone, in its place.
  for (size_t i = 0; i < requests.size();) {
    size_t end = i;
    while (end < requests.size() && Ordinary(requests[end].msg.type(), requests[end].msg)) ++end;
    if (end == i) {
      AppendRequest& r = requests[i++];
      const MessageType type = r.msg.type();
      AppendOne(r.ctx, std::move(r.msg), std::move(r.done), type, started);
      continue;
    }
    RunRef run = Run::Create(&completion_, end - i);
    if (options_.batch_appenders_write) run->set_may_write_here();
    for (AppendContext& a : run->entries()) {
      AppendRequest& r = requests[i++];
      a.msg = std::move(r.msg);
      a.done = std::move(r.done);
      a.caller = &r.ctx;
      a.metered = true;
      a.started = started;
    }
    Submit(std::move(run));
  }
}

void WalImpl::Submit(RunRef run) {
  const size_t stopped_in_admit = chain_.Admit(run->entries());
  const auto live = static_cast<int64_t>(run->size() - stopped_in_admit);
  InterceptorChain::Appends stopped;
  if (stopped_in_admit > 0) {
    // Answered (a duplicate by whoever took it over); the rest enters.
    for (AppendContext& a : run->entries()) {
      if (a.stage == AppendContext::Stage::kAdmitting) continue;
      if (a.stage == AppendContext::Stage::kDuplicate) metrics_.Deduplicated();
      stopped.push_back(&a);
    }
    completion_.FinishNow(stopped);
    if (live == 0) return;
  }
  // Counted in flight at once: the completions write the same cache line.
  if (absl::Status rejection = admission_.Begin(live); !rejection.ok()) {
    stopped.clear();
    for (AppendContext& a : run->entries()) {
      if (a.stage != AppendContext::Stage::kAdmitting) continue;
      a.Reject(rejection);
      stopped.push_back(&a);
    }
    completion_.FinishNow(stopped);
    return;
  }
  for (AppendContext& a : run->entries()) {
    if (a.stage != AppendContext::Stage::kAdmitting) continue;
    a.stage = AppendContext::Stage::kInFlight;
    a.in_flight = true;
    // The adaptor's own TimeTicks have no caller and no span.
    if (a.caller != nullptr) {
      std::tie(a.append_ctx, a.append_span) = StartSpanForMessage(*a.caller, &a.msg, "wal.append");
      a.caller = nullptr;
    }
  }
  sequencer_.Sequence(*run);
}

void WalImpl::SyncTimeTick() {
  if (timeticks_.TakeTraffic()) {
    // A persisted TimeTick: a run of one, sequenced like any append (not metered, no span).
    RunRef run = Run::Create(&completion_, 1);
    AppendContext& tick = (*run)[0];
    tick.role = AppendRole::kTimeTick;
    tick.msg = NewTimeTickMessage(TimeTick(0));
    Submit(std::move(run));
    return;
  }
  // Idle: a non-persisted tick advances tailing readers and expires abandoned transactions.
  sequencer_.IdleTick([this](TimeTick tt) { timeticks_.ObserveIdleTick(tt); });
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

// Counts itself in the Wal's live readers while it exists (an internal one also among the
// internal readers, and none of its reads in the read metrics), and what it returns by the
// mode the raw scanner was in when it returned it.
class CountedScanner final : public Scanner {
 public:
  CountedScanner(std::unique_ptr<Scanner> inner, std::atomic<int>* readers,
                 std::atomic<int>* internal, const SwitchableScanner* raw,
                 const WalMetrics* metrics, const Admission* admission)
      : inner_(std::move(inner)),
        readers_(readers),
        internal_(internal),
        raw_(raw),
        metrics_(metrics),
        admission_(admission) {
    if (internal_ != nullptr) internal_->fetch_add(1, std::memory_order_acq_rel);
  }
  ~CountedScanner() override {
    if (internal_ != nullptr) internal_->fetch_sub(1, std::memory_order_acq_rel);
    readers_->fetch_sub(1, std::memory_order_acq_rel);
  }

  absl::StatusOr<ImmutableMessagePtr> Next(const trace::Context& ctx,
                                           absl::Time deadline) override {
    absl::StatusOr<ImmutableMessagePtr> m = inner_->Next(ctx, deadline);
    if (m.ok() && *m != nullptr && internal_ == nullptr) {
      (raw_->mode() == ScanMode::kTailing ? metrics_->read_tailing() : metrics_->read_catchup())
          ->Inc();
    }
    // A closed backend ends its readers CANCELLED, which a consumer takes as final: a reader
    // of a closed WAL gets what the WAL was closed with instead, like the tailing ones (the
    // client then re-routes or retries).
    if (absl::IsCancelled(m.status())) {
      if (absl::Status closed = admission_->Closed(); !closed.ok()) return closed;
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
  std::atomic<int>* internal_;    // null for a consumer's
  const SwitchableScanner* raw_;  // owned by inner_'s chain
  const WalMetrics* metrics_;     // the Wal's, which outlives its scanners
  const Admission* admission_;    // the Wal's
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
    case DeliverPolicy::Kind::kLatest:
      if (std::optional<MessageId> last = sequencer_.last_id()) {
        so.start = *last;
        so.start_after = true;
      }
      break;
    case DeliverPolicy::Kind::kStartFrom:
    case DeliverPolicy::Kind::kStartAfter:
      if (!options.policy.id.valid()) {
        return StreamingError(StreamingCode::kInvalidArgument, "deliver policy needs a message id");
      }
      so.start = options.policy.id;
      so.start_after = options.policy.kind == DeliverPolicy::Kind::kStartAfter;
      break;
  }
  so.open_catchup = [backend = backend_.get(), vchannel = options.vchannel,
                     traced = !options.internal](
                        const MessageId& start) -> absl::StatusOr<std::unique_ptr<Scanner>> {
    ReadOptions ro;
    ro.start = start.valid() ? ReadOptions::Start::kFrom : ReadOptions::Start::kEarliest;
    ro.id = start;
    ASSIGN_OR_RETURN(auto backend_scanner, backend->Read(ro));
    return NewCatchupScanner(std::move(backend_scanner), vchannel, traced);
  };
  uncount.n = nullptr;  // the scanner owns the count from here
  auto raw = std::make_unique<SwitchableScanner>(std::move(so));
  const SwitchableScanner* raw_view = raw.get();
  return std::make_unique<CountedScanner>(
      std::make_unique<DeliveringScanner>(std::move(raw), options.filter, options_.txn_buffer),
      &readers_, options.internal ? &internal_readers_ : nullptr, raw_view, &metrics_, &admission_);
}

void WalImpl::Close(absl::Status rejection) {
  // A second Close returns at once (the first joined the ticker).
  if (!admission_.Close(rejection) && !ticker_.joinable()) return;
  if (ticker_.joinable()) {
    ticker_.request_stop();
    ticker_.join();
  }
  admission_.AwaitIdle();
  backend_->Close().IgnoreError();  // every queued callback has run; nothing left to report
  if (buffer_) buffer_->Close(std::move(rejection));  // wakes tailing readers with it
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
