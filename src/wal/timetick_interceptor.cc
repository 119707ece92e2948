#include "wal/timetick_interceptor.h"

namespace kf::wal {

size_t TimeTickInterceptor::Admit(std::span<AppendContext> run) {
  uint64_t admitted = 0;
  for (const AppendContext& a : run) {
    if (a.stage == AppendContext::Stage::kAdmitting && a.metered) ++admitted;
  }
  if (admitted > 0) traffic_.fetch_add(admitted, std::memory_order_relaxed);
  return 0;
}

absl::Status TimeTickInterceptor::BeforeSequence(AppendContext& append, TimeTick tt) {
  if (append.role == AppendRole::kTimeTick) txns_->ObserveWatermark(tt);
  return absl::OkStatus();
}

}  // namespace kf::wal
