#include "wal/completion.h"

#include <utility>

#include "absl/base/optimization.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace kf::wal {

void Completion::Settle(AppendContext& a, absl::Status status) {
  if (a.impl_span) {
    if (!status.ok()) a.impl_span->RecordError(status);
    a.impl_span->End();
    a.impl_span.reset();
  }
  if (!status.ok()) {
    // The entry may or may not be durable. The backend is now unusable (its errors are sticky
    // or it was fenced); the next owner recovers `_ik` state from the log, so the client's
    // retry with the same key is safe.
    absl::Status sticky =
        IsFenced(status)
            ? std::move(status)
            : StreamingError(StreamingCode::kTransport,
                             absl::StrCat("append may or may not be durable: ", status.message()));
    admission_->Break(sticky);
    chain_->AfterAbandoned(a, sticky);
    a.result = std::move(sticky);
    return;
  }
  a.result = AppendResult{.id = a.id,
                          .timetick = a.timetick,
                          .last_confirmed = a.stamp.last_confirmed.value_or(a.id),
                          .txn = std::move(a.txn)};
  // Callbacks run in WAL order, so the buffer receives every durable message in order.
  // A rejection (closed buffer) only means no tailing reader will see it.
  if (!a.retain) {
    chain_->AfterDurable(a, no_message_);
    buffer_->Skip(a.id, a.timetick);  // the buffer covers only what follows
    return;
  }
  a.msg.Stamp(a.stamp);  // now as persisted
  ImmutableMessagePtr durable = std::make_shared<const ImmutableMessage>(a.id, std::move(a.msg));
  chain_->AfterDurable(a, durable);
  buffer_->Append(std::move(durable)).IgnoreError();
}

void Completion::Complete(Run& run) {
  // The entries not answered yet are those enqueued: settled, all of them, by now.
  if (run.size() == 1) {  // a single Append's
    AppendContext* const one = &run[0];
    if (one->stage == AppendContext::Stage::kEnqueued) FinishEnqueued(std::span(&one, 1));
    return;
  }
  InterceptorChain::Appends done;
  for (AppendContext& a : run.entries()) {
    if (a.stage == AppendContext::Stage::kEnqueued) done.push_back(&a);
  }
  if (!done.empty()) FinishEnqueued(done);
}

void Completion::FinishEnqueued(std::span<AppendContext* const> done) {
  for (AppendContext* a : done) {
    if (ABSL_PREDICT_FALSE(!a->hold_status.ok()) && a->result.ok()) a->result = a->hold_status;
  }
  const auto n = static_cast<int64_t>(done.size());
  // Settled (in the buffer) before anyone hears of it: a tick that follows may enter the buffer.
  unsettled_.fetch_sub(n, std::memory_order_release);
  chain_->Finish(done, /*all_admitted=*/true);
  const WalMetrics::Clock::time_point now = WalMetrics::Clock::now();
  for (AppendContext* a : done) Answer(*a, now);
  admission_->End(n);
}

void Completion::FinishNow(std::span<AppendContext* const> appends) {
  chain_->Finish(appends);
  int64_t in_flight = 0;
  WalMetrics::Clock::time_point now{};
  for (AppendContext* a : appends) {
    if (a->stage == AppendContext::Stage::kDuplicate) {  // answered by whoever took it over
      a->stage = AppendContext::Stage::kAnswered;
      continue;
    }
    if (!a->in_flight) {  // never entered: no span, no latency
      Answer(*a, a->started);
      continue;
    }
    if (in_flight++ == 0) now = WalMetrics::Clock::now();
    Answer(*a, now);
  }
  admission_->End(in_flight);
}

void Completion::Answer(AppendContext& a, WalMetrics::Clock::time_point now) {
  if (a.append_span) {
    if (!a.result.ok()) a.append_span->RecordError(a.result.status());
    a.append_span->End();
  }
  // Before the callback: whoever sees the ack also sees it counted.
  if (a.metered) metrics_->AppendFinished(a.result.status(), a.started, now, a.bytes);
  a.stage = AppendContext::Stage::kAnswered;
  if (a.done) std::move(a.done)(std::move(a.result));
  // E.g. a body lets its commit's gate go: the commit is answered after it.
  if (a.after_answer) {
    absl::AnyInvocable<void()&&> after = std::move(a.after_answer);
    a.after_answer = nullptr;
    std::move(after)();
  }
}

}  // namespace kf::wal
