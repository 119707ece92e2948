#include "query/checkpoint_prefetch.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"

namespace kf::query {

CheckpointPrefetch::CheckpointPrefetch(const RecoveryStorageOptions& options, std::string pchannel,
                                       ShardOptions shard)
    : options_(options), pchannel_(std::move(pchannel)), loaded_(absl::UnknownError("loading")) {
  thread_ = std::thread([this, shard = std::move(shard)] {
    auto loaded = LoadCheckpoint(options_, pchannel_, shard, [this] { return stopping_.load(); });
    absl::MutexLock lock(&mu_);
    loaded_ = std::move(loaded);
    done_ = true;
  });
}

CheckpointPrefetch::~CheckpointPrefetch() {
  stopping_ = true;
  thread_.join();
}

bool CheckpointPrefetch::taken() const {
  absl::MutexLock lock(&mu_);
  return taken_;
}

void CheckpointPrefetch::WaitLoaded() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&done_));
}

absl::StatusOr<std::optional<RecoveredChannel>> CheckpointPrefetch::Take(
    const std::function<bool()>& cancelled) {
  absl::MutexLock lock(&mu_);
  while (!mu_.AwaitWithTimeout(absl::Condition(&done_), absl::Milliseconds(5))) {
    if (cancelled != nullptr && cancelled()) {
      return absl::CancelledError(absl::StrCat("prefetch of ", pchannel_, ": no longer wanted"));
    }
  }
  if (taken_) {
    return absl::FailedPreconditionError(absl::StrCat("prefetch of ", pchannel_, ": taken"));
  }
  if (!loaded_.ok()) return loaded_.status();
  // The key read again now that the WAL is open: the previous owner can no longer change it
  // unnoticed (a commit of its own after this fails, or is overwritten, as without a prefetch).
  const absl::StatusOr<int64_t> revision = CheckpointRevision(options_, pchannel_);
  if (!revision.ok()) return revision.status();
  const int64_t loaded_revision = loaded_->has_value() ? (*loaded_)->mod_revision : 0;
  if (*revision != loaded_revision) {
    return absl::AbortedError(absl::StrCat("prefetch of ", pchannel_, ": its checkpoint was at ",
                                           loaded_revision, ", it is at ", *revision, " now"));
  }
  taken_ = true;
  return std::move(loaded_);
}

}  // namespace kf::query
