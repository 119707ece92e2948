// WalImpl: the Wal of wal.h over one WalBackend. See wal.h for the contract; this header
// exists so tests can reach the implementation's knobs.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wal/idempotency.h"
#include "wal/wal.h"

namespace kf::wal {

class WalImpl final : public Wal {
 public:
  WalImpl(WalOptions options, std::unique_ptr<WalBackend> backend);
  ~WalImpl() override;

  // Scans the log tail and starts the timetick loop. Called once by OpenWal.
  absl::Status Recover();
  void Start();

  const std::string& pchannel() const override { return options_.pchannel; }
  Term term() const override { return term_; }
  void Append(const trace::Context& ctx, MutableMessage msg, AppendResultCallback done) override;
  absl::StatusOr<std::unique_ptr<Scanner>> Read(const ScanOptions& options) override;
  TimeTick LastTimeTick() const override;
  void Close() override;

 private:
  struct Pending;

  // Stamps and hands one message to the backend; retries recoverable enqueue failures.
  void Persist(std::shared_ptr<Pending> p);
  void Arrive(const std::shared_ptr<Pending>& p);
  void OnDurable(const std::shared_ptr<Pending>& p, const MessageId& id, TimeTick tt,
                 absl::Status status);
  void Finish(const std::shared_ptr<Pending>& p, absl::StatusOr<AppendResult> result);
  void TimeTickLoop(std::stop_token stop);
  absl::Status Rejection() const ABSL_SHARED_LOCKS_REQUIRED(state_mu_);

  const WalOptions options_;
  const std::unique_ptr<WalBackend> backend_;
  const Term term_;
  IdempotencyTable<AppendResult> dedup_;

  // The sequencer: timetick allocation and backend enqueue happen under one lock so WAL order
  // and timetick order agree.
  mutable absl::Mutex seq_mu_;
  TimeTick last_timetick_ ABSL_GUARDED_BY(seq_mu_);

  mutable absl::Mutex state_mu_;
  bool closed_ ABSL_GUARDED_BY(state_mu_) = false;
  absl::Status broken_ ABSL_GUARDED_BY(state_mu_);  // sticky: a durable-path failure
  int64_t in_flight_ ABSL_GUARDED_BY(state_mu_) = 0;
  uint64_t appends_since_tick_ ABSL_GUARDED_BY(state_mu_) = 0;

  std::jthread ticker_;
};

}  // namespace kf::wal
