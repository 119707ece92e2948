#include "wal/replicate_interceptor.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace kf::wal {

size_t ReplicateInterceptor::Admit(std::span<AppendContext> run) {
  size_t rejected = 0;
  for (AppendContext& a : run) {
    if (a.stage != AppendContext::Stage::kAdmitting) continue;
    if (absl::Status bad = ReplicateState::Prepare(a.msg, &a.replicate); !bad.ok()) {
      a.Reject(std::move(bad));
      ++rejected;
    }
  }
  return rejected;
}

absl::Status ReplicateInterceptor::BeforeSequence(AppendContext& append, TimeTick tt) {
  append.replicate.time_tick = tt.value();
  return state_.Check(append.replicate);
}

void ReplicateInterceptor::AfterEnqueued(AppendContext& append) { state_.Apply(append.replicate); }

void ReplicateInterceptor::AfterDurable(AppendContext& append,
                                        const ImmutableMessagePtr& /*message*/) {
  absl::MutexLock lock(&mu_);
  if (append.replicate.advances) {
    durable_[append.replicate.source->cluster_id()] = *append.replicate.source;
  }
  if (append.role == AppendRole::kTimeTick) return;
  last_counted_tt_ = append.timetick.value();
  if (++counted_ % kCountStride != 0) return;
  count_index_.emplace_back(last_counted_tt_, counted_);
  if (count_index_.size() > kCountIndexMax) count_index_.pop_front();
}

void ReplicateInterceptor::Restore(ReplicateState state, TimeTick last) {
  absl::MutexLock seq(seq_mu_);
  absl::MutexLock lock(&mu_);
  durable_.clear();
  for (const auto& [source, c] : state.checkpoints()) durable_[source] = c;
  state_ = std::move(state);
  counted_ = 0;
  last_counted_tt_ = last.value();
  count_index_.assign(1, {last.value(), 0});
}

std::optional<uint64_t> ReplicateInterceptor::MessagesAfter(TimeTick tt) const {
  absl::MutexLock lock(&mu_);
  if (tt.value() >= last_counted_tt_) return 0;
  // The last indexed message at or before `tt`: those counted after it include every message
  // after `tt`, and at most kCountStride - 1 before it.
  auto after = std::upper_bound(
      count_index_.begin(), count_index_.end(), tt.value(),
      [](uint64_t t, const std::pair<uint64_t, uint64_t>& e) { return t < e.first; });
  if (after == count_index_.begin()) return std::nullopt;  // older than what was counted
  return counted_ - std::prev(after)->second;
}

kingfisher::v1::WalReplicateState ReplicateInterceptor::replicate_state() const {
  kingfisher::v1::WalReplicateState out;
  {
    absl::MutexLock seq(seq_mu_);
    *out.mutable_config() = state_.config();
    for (const auto& [target, h] : state_.handovers()) *out.add_handovers() = h;
  }
  absl::MutexLock lock(&mu_);
  for (const auto& [source, c] : durable_) *out.add_checkpoints() = c;
  return out;
}

}  // namespace kf::wal
