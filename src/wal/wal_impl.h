// WalImpl: the Wal of wal.h over one WalBackend. See wal.h for the contract and
// docs/wal-internals.md for how the parts fit: every append, single or batched, goes in a Run
// (run.h) through the chain's admission (interceptor.h), the in-flight admission (admission.h),
// the sequencer (sequencer.h) and the completion (completion.h); the chain's interceptors are
// wired here, in order. Recovery is RecoverWal (recovery.h); this header exists so tests can
// reach the implementation's knobs.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "wal/admission.h"
#include "wal/buffer/write_ahead_buffer.h"
#include "wal/collection_interceptor.h"
#include "wal/completion.h"
#include "wal/idempotency_interceptor.h"
#include "wal/interceptor.h"
#include "wal/replicate_interceptor.h"
#include "wal/run.h"
#include "wal/sequencer.h"
#include "wal/timetick_interceptor.h"
#include "wal/txn/txn_manager.h"
#include "wal/txn_interceptor.h"
#include "wal/wal.h"
#include "wal/wal_metrics.h"

namespace kf::wal {

class WalImpl final : public Wal {
 public:
  // `extra` (borrowed, must outlive the Wal) join the chain after the built-in interceptors,
  // in order: what later capabilities hook in with (and tests).
  WalImpl(WalOptions options, std::unique_ptr<WalBackend> backend,
          std::vector<AppendInterceptor*> extra = {});
  ~WalImpl() override;

  // Recovers the log's state (RecoverWal) and hands it to its owners, creating the write-ahead
  // buffer. Called once by OpenWal, then Start starts the timetick loop (tests that drive
  // SyncTimeTick themselves may skip Start).
  absl::Status Recover();
  void Start();

  const std::string& pchannel() const override { return options_.pchannel; }
  Term term() const override { return term_; }
  void Append(const trace::Context& ctx, MutableMessage msg, AppendResultCallback done) override;
  void AppendBatch(std::vector<AppendRequest> requests) override;
  absl::StatusOr<std::unique_ptr<Scanner>> Read(const ScanOptions& options) override;
  TimeTick LastTimeTick() const override { return sequencer_.last_timetick(); }
  kingfisher::v1::WalReplicateState replicate_state() const override {
    return replicates_.replicate_state();
  }
  std::optional<uint64_t> MessagesAfter(TimeTick tt) const override {
    return replicates_.MessagesAfter(tt);
  }
  void RequestTimeTick() override { SyncTimeTick(); }
  int readers() const override {
    return readers_.load(std::memory_order_relaxed) -
           internal_readers_.load(std::memory_order_relaxed);
  }
  absl::Status Health() const override { return admission_.Health(); }
  std::optional<uint64_t> StoredBytes() const override { return backend_->StoredBytes(); }
  absl::StatusOr<MessageId> TruncateBefore(const MessageId& keep) override;
  void HoldForReplication(const std::string& secondary, std::optional<MessageId> from) override;
  using Wal::Close;
  void Close(absl::Status rejection) override;

  // One round of the timetick loop: a persisted TimeTick if anything was appended since the
  // last round, else a non-persisted one into the write-ahead buffer (when nothing is in
  // flight). Either is a watermark that expires abandoned transactions.
  void SyncTimeTick();

  // Tests and diagnostics.
  const TxnManager& txns() const { return txns_; }
  CollectionTable::State collection_state(std::string_view vchannel) const {
    return collections_.state(vchannel);
  }
  const WriteAheadBuffer& buffer() const { return *buffer_; }

 private:
  // Sets `a` up for `msg` as its role says (INVALID_ARGUMENT: a txn message without a
  // decodable `_tx`).
  static absl::Status Classify(MessageType type, AppendContext& a);
  // Append after Classify, as a run of one.
  void AppendOne(const trace::Context& ctx, MutableMessage&& msg, AppendResultCallback&& done,
                 MessageType type, WalMetrics::Clock::time_point started);
  // Every append's way in: the chain's Admit hooks, the in-flight admission, `wal.append`, the
  // sequencer. Answers what is stopped on the way.
  void Submit(RunRef run);
  void TimeTickLoop(std::stop_token stop);

  const WalOptions options_;
  absl::Mutex holds_mu_;
  // HoldForReplication's, by secondary (nullopt: released).
  std::map<std::string, std::optional<MessageId>> holds_ ABSL_GUARDED_BY(holds_mu_);
  const std::unique_ptr<WalBackend> backend_;
  const Term term_;
  WalMetrics metrics_;
  TxnManager txns_;
  // Live scanners. The buffer retains messages only while there is one: a WAL nobody tails
  // should not pay for what it keeps (memory, and frees on the callback thread). A message not
  // retained is a Skip, so the buffer never claims to cover it.
  std::atomic<int> readers_{0};           // every scanner: the buffer retains while > 0
  std::atomic<int> internal_readers_{0};  // those of ScanOptions::internal
  Admission admission_;
  InterceptorChain chain_;
  Completion completion_;
  Sequencer sequencer_;
  // The chain, in order (wired by the constructor).
  ReplicateInterceptor replicates_;
  CollectionInterceptor collections_;
  TxnInterceptor txn_rules_;
  BroadcastInterceptor broadcasts_;
  IdempotencyInterceptor idempotency_;
  TimeTickInterceptor timeticks_;
  std::shared_ptr<WriteAheadBuffer> buffer_;  // set by Recover

  std::jthread ticker_;
};

}  // namespace kf::wal
