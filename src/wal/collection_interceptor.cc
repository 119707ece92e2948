#include "wal/collection_interceptor.h"

#include <optional>
#include <utility>

namespace kf::wal {

size_t CollectionInterceptor::Admit(std::span<AppendContext> run) {
  // Payload decoding stays outside the sequencer lock.
  size_t rejected = 0;
  std::optional<absl::Status> inserts;  // asked at the run's first Insert
  for (AppendContext& a : run) {
    if (a.stage != AppendContext::Stage::kAdmitting) continue;
    absl::Status bad = CollectionTable::Prepare(a.msg, &a.collection);
    if (bad.ok() && a.collection.type == MessageType::kInsert && admit_inserts_) {
      if (!inserts.has_value()) inserts = admit_inserts_();
      bad = *inserts;
    }
    if (!bad.ok()) {
      a.Reject(std::move(bad));
      ++rejected;
    }
  }
  return rejected;
}

absl::Status CollectionInterceptor::BeforeSequence(AppendContext& append, TimeTick /*tt*/) {
  if (append.collection.kind == CollectionAppend::Kind::kUnchecked) return absl::OkStatus();
  return table_.Admit(append.msg.vchannel(), append.collection);
}

void CollectionInterceptor::AfterEnqueued(AppendContext& append) {
  if (append.collection.kind == CollectionAppend::Kind::kDdl) table_.Apply(append.collection);
}

void CollectionInterceptor::Restore(CollectionTable table) {
  absl::MutexLock lock(seq_mu_);
  table_ = std::move(table);
}

CollectionTable::State CollectionInterceptor::state(std::string_view vchannel) const {
  absl::MutexLock lock(seq_mu_);
  return table_.state(vchannel);
}

}  // namespace kf::wal
