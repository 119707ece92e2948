// ReplicateInterceptor: the replicate rules (replicate_state.h, docs/replication.md) as the
// first member of the append chain (interceptor.h), so that a refused message has touched no
// other interceptor's state. Admit decodes `_rh` and an AlterReplicateConfig's payload on the
// appending thread (INVALID_ARGUMENT); BeforeSequence checks the append under the sequencer
// lock (REPLICATE_VIOLATION, IGNORED_OPERATION); AfterEnqueued applies it under the same lock,
// so the next append, also of the same run, sees the new checkpoint or configuration;
// AfterDurable records the checkpoint of what is durable, which is what a replicator resumes
// after (replicate_state()).
//
// Thread-safety: the rules' state is guarded by the sequencer lock (`seq_mu`); the durable
// checkpoints by the interceptor's own lock. Restore and replicate_state take them.
#pragma once

#include <map>
#include <string>

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

  // The recovered state (everything in it is durable), before the first append.
  void Restore(ReplicateState state) ABSL_LOCKS_EXCLUDED(seq_mu_, mu_);
  // The configuration in force and the durable checkpoints.
  kingfisher::v1::WalReplicateState replicate_state() const ABSL_LOCKS_EXCLUDED(seq_mu_, mu_);

 private:
  absl::Mutex* const seq_mu_;
  ReplicateState state_ ABSL_GUARDED_BY(seq_mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, kingfisher::v1::ReplicateCheckpoint> durable_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::wal
