// CollectionInterceptor: the collection rules (collections/collection_table.h,
// docs/ddl-node.md) as a member of the append chain (interceptor.h). Admit decodes what the
// rules need on the appending thread (CollectionTable::Prepare: INVALID_ARGUMENT for a malformed
// vchannel or payload); BeforeSequence checks the append against the table under the sequencer
// lock (COLLECTION_NOT_FOUND, COLLECTION_EXISTS, INVALID_ARGUMENT), first among the rules so
// that a rejected message neither joins a txn nor fails the vchannel's txns; AfterEnqueued
// applies a DDL's effect under the same lock, so every later append sees it and nothing lands
// after a DropCollection. Its table comes from recovery (RecoverWal replays every DDL).
//
// Admit also asks `admit_inserts` (WalOptions), once per run holding an Insert, and refuses
// the run's Inserts with its error (the growing-memory limit).
//
// Thread-safety: the table is guarded by the sequencer lock (`seq_mu`); Restore and state take
// it.
#pragma once

#include <functional>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "wal/collections/collection_table.h"
#include "wal/interceptor.h"

namespace kf::wal {

class CollectionInterceptor final : public AppendInterceptor {
 public:
  CollectionInterceptor(absl::Mutex* seq_mu, std::function<absl::Status()> admit_inserts)
      : seq_mu_(seq_mu), admit_inserts_(std::move(admit_inserts)) {}

  uint32_t hooks() const override { return kAdmit | kBeforeSequence | kAfterEnqueued; }
  // AfterEnqueued applies DDL, which is never ordinary.
  uint32_t ordinary_hooks() const override { return kAdmit | kBeforeSequence; }
  size_t Admit(std::span<AppendContext> run) override;
  absl::Status BeforeSequence(AppendContext& append, TimeTick tt) override
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(seq_mu_);
  void AfterEnqueued(AppendContext& append) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(seq_mu_);

  // The recovered table, before the first append.
  void Restore(CollectionTable table) ABSL_LOCKS_EXCLUDED(seq_mu_);
  CollectionTable::State state(std::string_view vchannel) const ABSL_LOCKS_EXCLUDED(seq_mu_);

 private:
  absl::Mutex* const seq_mu_;
  const std::function<absl::Status()> admit_inserts_;
  CollectionTable table_ ABSL_GUARDED_BY(seq_mu_);
};

}  // namespace kf::wal
