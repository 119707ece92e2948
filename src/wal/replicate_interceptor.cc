#include "wal/replicate_interceptor.h"

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
  if (!append.replicate.advances) return;
  absl::MutexLock lock(&mu_);
  durable_[append.replicate.source->cluster_id()] = *append.replicate.source;
}

void ReplicateInterceptor::Restore(ReplicateState state) {
  absl::MutexLock seq(seq_mu_);
  absl::MutexLock lock(&mu_);
  durable_.clear();
  for (const auto& [source, c] : state.checkpoints()) durable_[source] = c;
  state_ = std::move(state);
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
