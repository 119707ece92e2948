// ReplicateInterceptor: the replicate rules (replicate_state.h, docs/replication.md) as the
// first member of the append chain (interceptor.h), so that a refused message has touched no
// other interceptor's state. Admit decodes `_rh` and an AlterReplicateConfig's payload on the
// appending thread (INVALID_ARGUMENT); BeforeSequence checks the append under the sequencer
// lock (REPLICATE_VIOLATION, IGNORED_OPERATION); AfterEnqueued applies it under the same lock,
// so the next append, also of the same run, sees the new checkpoint or configuration;
// AfterDurable records the checkpoint of what is durable, which is what a replicator resumes
// after (replicate_state()), and counts durable messages for a replicator's lag
// (MessagesAfter).
//
// Thread-safety: the rules' state is guarded by the sequencer lock (`seq_mu`); the durable
// checkpoints by the interceptor's own lock. Restore and replicate_state take them.
#pragma once

#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wal/interceptor.h"
#include "wal/replicate_state.h"

namespace kf::wal {

class ReplicateInterceptor final : public AppendInterceptor {
 public:
  ReplicateInterceptor(absl::Mutex* seq_mu, std::string cluster_id)
      : seq_mu_(seq_mu), state_(std::move(cluster_id)) {}

  uint32_t hooks() const override {
    return kAdmit | kBeforeSequence | kAfterEnqueued | kAfterDurable;
  }
  size_t Admit(std::span<AppendContext> run) override;
  absl::Status BeforeSequence(AppendContext& append, TimeTick tt) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(seq_mu_);
  void AfterEnqueued(AppendContext& append) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(seq_mu_);
  void AfterDurable(AppendContext& append, const ImmutableMessagePtr& message) override;

  // The recovered state (everything in it is durable, up to `last`), before the first append.
  void Restore(ReplicateState state, TimeTick last) ABSL_LOCKS_EXCLUDED(seq_mu_, mu_);
  // The configuration in force and the durable checkpoints.
  kingfisher::v1::WalReplicateState replicate_state() const ABSL_LOCKS_EXCLUDED(seq_mu_, mu_);
  // Wal::MessagesAfter.
  std::optional<uint64_t> MessagesAfter(TimeTick tt) const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // Every kCountStride-th durable message's (timetick, count) is indexed, the last
  // kCountIndexMax of them (1 MiB: the last ~1M messages).
  static constexpr uint64_t kCountStride = 16;
  static constexpr size_t kCountIndexMax = 65536;

  absl::Mutex* const seq_mu_;
  ReplicateState state_ ABSL_GUARDED_BY(seq_mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, kingfisher::v1::ReplicateCheckpoint> durable_ ABSL_GUARDED_BY(mu_);
  uint64_t counted_ ABSL_GUARDED_BY(mu_) = 0;  // durable messages since Restore, no TimeTicks
  uint64_t last_counted_tt_ ABSL_GUARDED_BY(mu_) = 0;
  // (timetick, counted_ then), oldest first; the first is Restore's (last recovered, 0).
  std::deque<std::pair<uint64_t, uint64_t>> count_index_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::wal
