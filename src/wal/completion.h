// Completion: the answering side of the WAL adaptor's append path, one mechanism for runs of one
// and of many (run.h). Settle runs in each entry's backend callback, in WAL order: it ends the
// attempt's `wal.appendimpl`, hands the durable message to the write-ahead buffer (or records
// that it is skipped) and runs the AfterDurable hooks, or, when the entry failed to become
// durable, breaks the WAL (the failure is ambiguous and sticky) and runs AfterAbandoned.
// Complete runs once the run's last reference is gone (every callback, the appending thread,
// any hold such as a commit gate): it answers every enqueued entry of the run together, with
// one Finish for the interceptors (one lock of the `_ik` table) and one clock read. FinishNow
// answers appends that never reached the backend (rejected, refused for good), at once.
//
// Answering an append: the Finish hooks, its `wal.append` span, its metrics (Wal::Append calls
// only), then its callback; then it leaves the appends in flight (admission.h).
//
// Thread-safety: thread-safe; Settle must be called in WAL order (the backend's callbacks are).
// Errors: none of its own; an append is answered with its result or the error it was given.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/status.h"
#include "wal/admission.h"
#include "wal/append_context.h"
#include "wal/buffer/write_ahead_buffer.h"
#include "wal/interceptor.h"
#include "wal/run.h"
#include "wal/wal_metrics.h"

namespace kf::wal {

class Completion {
 public:
  Completion(InterceptorChain* chain, WalMetrics* metrics, Admission* admission)
      : chain_(chain), metrics_(metrics), admission_(admission) {}

  // The buffer durable messages go to. Once, before the first append.
  void set_buffer(std::shared_ptr<WriteAheadBuffer> buffer) { buffer_ = std::move(buffer); }

  // `n` entries were enqueued (by the sequencer, under its lock): they are unsettled until
  // their run completes.
  void Enqueued(int64_t n) { unsettled_.fetch_add(n, std::memory_order_relaxed); }
  // No enqueued entry is waiting for its run to complete: everything enqueued is in the buffer
  // (or skipped). Meaningful under the sequencer lock, which orders it with Enqueued.
  bool AllSettled() const { return unsettled_.load(std::memory_order_acquire) == 0; }

  // The backend's callback for `append`: `status` OK once it is durable.
  void Settle(AppendContext& append, absl::Status status);
  // The last reference to `run` is gone: answers its enqueued entries.
  void Complete(Run& run);
  // Answers `appends` (stopped in Admit, rejected, or refused by the backend for good) now.
  void FinishNow(std::span<AppendContext* const> appends);

  // A non-persisted TimeTick enters the buffer (the sequencer's, under its lock).
  void PublishIdleTick(ImmutableMessagePtr tick) { buffer_->Append(std::move(tick)).IgnoreError(); }

 private:
  // Complete's work for the entries in `done` (the enqueued ones of a run).
  void FinishEnqueued(std::span<AppendContext* const> done);
  void Answer(AppendContext& append, WalMetrics::Clock::time_point now);

  InterceptorChain* const chain_;
  WalMetrics* const metrics_;
  Admission* const admission_;
  std::shared_ptr<WriteAheadBuffer> buffer_;
  const ImmutableMessagePtr no_message_;  // AfterDurable's when the message was not kept
  std::atomic<int64_t> unsettled_{0};
};

}  // namespace kf::wal
