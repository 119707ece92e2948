#include "wal/sequencer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <utility>

#include "message/builders.h"
#include "message/message_trace.h"

namespace kf::wal {

namespace {

[[noreturn]] void BackendBroke(const std::string& pchannel, const MessageId& encoded,
                               const MessageId& got) {
  std::fprintf(stderr, "FATAL: pchannel %s: backend assigned id %s to the entry it encoded as %s\n",
               pchannel.c_str(), got.ToText().c_str(), encoded.ToText().c_str());
  std::abort();
}

// docs/semantics.md §1: reading from the LCMID must yield every later message, so it is the
// Begin of the oldest transaction still open (its later messages are still to come), if that is
// before the next entry; nullopt: the message itself. The backend's next id (its lock) is asked
// only when a txn is open.
std::optional<MessageId> Lcmid(const TxnManager& txns, const WalBackend& backend) {
  if (auto begin = txns.EarliestActiveBegin(); begin && begin->id < backend.NextId()) {
    return begin->id;
  }
  return std::nullopt;
}

}  // namespace

void Sequencer::Restore(TimeTick last_timetick, std::optional<MessageId> last_id) {
  absl::MutexLock lock(&mu_);
  last_timetick_ = last_timetick;
  last_id_ = last_id;
}

void Sequencer::Sequence(Run& run) {
  size_t from = 0;  // the entries before it are enqueued or answered
  for (;;) {
    Attempt attempt = SequenceOnce(run, from);
    // Rejected by a rule, not by the backend: never retried.
    if (!attempt.rejected.empty()) completion_->FinishNow(attempt.rejected);
    if (!attempt.refused) return;
    AppendContext& a = run[*attempt.refused];
    EndFailedAttempt(a, attempt.status);
    // A transient failure is retried, except inside a transaction: its admission cannot be
    // replayed at a new timetick, so the txn failed (AfterAbandoned) and the client retries it
    // whole.
    const bool retryable =
        (a.role == AppendRole::kPlain || a.role == AppendRole::kTimeTick) &&
        (absl::IsResourceExhausted(attempt.status) || absl::IsUnavailable(attempt.status));
    if (!retryable || a.attempts >= options_.max_append_attempts) {
      a.Reject(std::move(attempt.status));
      AppendContext* const refused = &a;
      completion_->FinishNow(std::span(&refused, 1));
      from = *attempt.refused + 1;
      continue;
    }
    absl::SleepFor(Backoff(a.attempts));
    from = *attempt.refused;  // the rest of the run follows it
  }
}

Sequencer::Attempt Sequencer::SequenceOnce(Run& run, size_t from) {
  Attempt out;
  uint32_t n = 0;
  size_t first = run.size();
  for (size_t i = from; i < run.size(); ++i) {
    if (run[i].stage == AppendContext::Stage::kInFlight && n++ == 0) first = i;
  }
  if (n == 0) return out;
  // One reference for each entry's callback, taken at once (the completion thread releases
  // them: one contended add per run instead of one per entry).
  RunRef::Reserve(run, n);
  uint32_t handed = 0;
  bool release_messages = false;
  bool held = false;  // a backend hold to end once the lock is released
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<TimeTick> tt0 = options_.tso->Allocate(n);
    if (!tt0.ok()) {
      ++run[first].attempts;
      out.refused = first;
      out.status = tt0.status();
    } else {
      // Read once for the run: from the next enqueue on, messages are retained for a reader
      // that opened meanwhile.
      const bool retain = readers_->load(std::memory_order_acquire) > 0 || chain_->needs_messages();
      std::optional<MessageId> lcmid;
      bool lcmid_known = false;
      uint64_t next_tt = tt0->value();
      int64_t enqueued = 0;
      // One group for the run where the backend can (WalBackend::BeginAppends), and a run of
      // one that this thread may write itself.
      held = n > 1 || run.may_write_here();
      if (held) backend_->BeginAppends();
      for (size_t i = first; i < run.size(); ++i) {
        AppendContext& a = run[i];
        if (a.stage != AppendContext::Stage::kInFlight) continue;
        const TimeTick tt(next_tt++);
        if (absl::Status admitted = chain_->BeforeSequence(a, tt); !admitted.ok()) {
          a.Reject(std::move(admitted));
          out.rejected.push_back(&a);
          continue;
        }
        // After the hooks (a CommitTxn's own txn no longer holds it back); once per attempt, as
        // nothing after the first message of a run changes the open txns.
        if (!lcmid_known) {
          lcmid = Lcmid(*txns_, *backend_);
          lcmid_known = true;
        }
        ++a.attempts;
        Stamp(a, tt, lcmid);
        a.retain = retain;
        a.stage = AppendContext::Stage::kEnqueued;  // before the backend has it: its callback
        ++handed;                                   // owns what it settles from then on
        absl::StatusOr<MessageId> id = Enqueue(a, RunRef::Adopt(run), i);
        if (!id.ok()) {  // nothing enqueued: the callback (and its reference) is gone
          a.stage = AppendContext::Stage::kInFlight;
          chain_->AfterAbandoned(a, id.status());
          out.refused = i;
          out.status = id.status();
          break;
        }
        // Under the lock that orders appends: every later append sees what the hooks record
        // (a DDL's effect, a Begin's id). Should the entry then fail to become durable, the
        // WAL is broken and appends nothing more.
        chain_->AfterEnqueued(a);
        last_timetick_ = tt;
        last_id_ = *id;
        ++enqueued;
      }
      completion_->Enqueued(enqueued);
      release_messages = !retain && enqueued > 0;
    }
  }
  RunRef::Unreserve(run, n - handed);
  if (release_messages) {
    // Not retained: freed here, on the thread that allocated them, after the lock (frees on
    // the callback thread contend for this thread's malloc arena). The completion reads only
    // what the message's absence does not change.
    for (size_t i = first; i < run.size(); ++i) {
      if (run[i].stage != AppendContext::Stage::kEnqueued) continue;
      MutableMessage gone = std::move(run[i].msg);  // takes its storage along
    }
  }
  // After the lock: a backend that writes the group on this thread (and runs its callbacks
  // here) must not hold up the next run's sequencing meanwhile.
  if (held) {
    if (run.may_write_here()) {
      backend_->EndAppendsWritingHere();
    } else {
      backend_->EndAppends();
    }
  }
  return out;
}

void Sequencer::Stamp(AppendContext& a, TimeTick tt, const std::optional<MessageId>& lcmid) {
  a.timetick = tt;
  a.stamp = AppendStamp{.timetick = tt, .term = options_.term, .last_confirmed = lcmid};
  // The persisted `_tc` is the last attempt's span (docs/tracing.md §5).
  a.impl_span = StartSpanForStampedMessage(a.append_ctx, a.msg, "wal.appendimpl", &a.stamp).second;
}

absl::StatusOr<MessageId> Sequencer::Enqueue(AppendContext& a, RunRef ref, size_t index) {
  // Encoded straight into the backend's queue; runs before the entry can become durable, so
  // the callback cannot race it for `a`.
  auto id = backend_->AppendEncoded(
      [&a](const MessageId& entry_id, std::string* out) {
        a.id = entry_id;
        const size_t before = out->size();
        a.msg.EncodeTo(out, a.stamp);
        a.bytes = out->size() - before;
      },
      [ref = std::move(ref), index](absl::Status s) mutable {
        // Released once the entry is settled, not whenever the backend drops the callback.
        RunRef run = std::move(ref);
        run->completion().Settle((*run)[index], std::move(s));
      });
  if (id.ok() && *id != a.id) BackendBroke(options_.pchannel, a.id, *id);
  return id;
}

void Sequencer::EndFailedAttempt(AppendContext& a, const absl::Status& status) {
  if (!a.impl_span) return;
  a.impl_span->RecordError(status);
  a.impl_span->End();
  a.impl_span.reset();
}

absl::Duration Sequencer::Backoff(int attempts) const {
  absl::Duration backoff = options_.initial_backoff;
  for (int i = 1; i < attempts; ++i) backoff = std::min(backoff * 2, absl::Milliseconds(500));
  return backoff;
}

bool Sequencer::IdleTick(absl::FunctionRef<void(TimeTick)> observe) {
  absl::MutexLock lock(&mu_);
  // The tick carries the last entry's id, so it may enter the buffer only once that entry is
  // there (the buffer takes messages in WAL order).
  if (!last_id_ || !completion_->AllSettled()) return false;
  auto tt = options_.tso->Allocate(1);
  if (!tt.ok()) return false;  // the next round tries again
  observe(*tt);
  last_timetick_ = *tt;
  if (readers_->load(std::memory_order_acquire) == 0) return true;  // nobody to advance
  MutableMessage tick = NewTimeTickMessage(*tt);
  tick.set_wal_term(options_.term);
  tick.set_not_persisted();
  if (auto begin = txns_->EarliestActiveBegin()) {
    tick.set_last_confirmed(begin->id);
  } else {
    tick.set_last_confirmed(*last_id_);
  }
  completion_->PublishIdleTick(
      std::make_shared<const ImmutableMessage>(*last_id_, std::move(tick)));
  return true;
}

TimeTick Sequencer::last_timetick() const {
  absl::MutexLock lock(&mu_);
  return last_timetick_;
}

std::optional<MessageId> Sequencer::last_id() const {
  absl::MutexLock lock(&mu_);
  return last_id_;
}

}  // namespace kf::wal
