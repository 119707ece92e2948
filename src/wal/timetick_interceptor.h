// TimeTickInterceptor: what a TimeTick means to the rest of the pchannel (docs/semantics.md §3),
// as a member of the append chain (interceptor.h), at its end. A TimeTick's timetick is a
// watermark: every transaction whose keepalive passed by then expires
// (TxnManager::ObserveWatermark), so an abandoned txn never holds back the LCMID; the idle
// pchannel's non-persisted ticks are watermarks too (ObserveIdleTick). And it keeps the traffic
// the timetick loop asks about: appends admitted since the last round (Wal::Append calls that
// passed the chain's Admit hooks, also those a rule rejects later; not duplicates, not the
// adaptor's own TimeTicks), which the loop answers with a persisted TimeTick.
//
// Thread-safety: thread-safe (the count is atomic; the watermark is the TxnManager's, observed
// under the sequencer lock so that it is ordered with the admissions).
#pragma once

#include <atomic>
#include <cstdint>

#include "wal/interceptor.h"
#include "wal/txn/txn_manager.h"

namespace kf::wal {

class TimeTickInterceptor final : public AppendInterceptor {
 public:
  explicit TimeTickInterceptor(TxnManager* txns) : txns_(txns) {}  // borrowed

  uint32_t hooks() const override { return kAdmit | kBeforeSequence; }
  uint32_t ordinary_hooks() const override { return kAdmit; }  // BeforeSequence: TimeTicks
  size_t Admit(std::span<AppendContext> run) override;
  absl::Status BeforeSequence(AppendContext& append, TimeTick tt) override;

  // The watermark of a non-persisted TimeTick at `tt` (under the sequencer lock).
  void ObserveIdleTick(TimeTick tt) { txns_->ObserveWatermark(tt); }
  // Whether anything was appended since the last call.
  bool TakeTraffic() { return traffic_.exchange(0, std::memory_order_relaxed) != 0; }

 private:
  TxnManager* const txns_;
  std::atomic<uint64_t> traffic_{0};
};

}  // namespace kf::wal
