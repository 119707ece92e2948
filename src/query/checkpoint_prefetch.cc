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

void CheckpointPrefetch::WaitLoaded() const {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&done_));
}

absl::StatusOr<std::optional<RecoveredChannel>> CheckpointPrefetch::Take(
    const std::function<bool()>& cancelled) {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&done_), absl::Milliseconds(5))) break;
    }
    if (cancelled != nullptr && cancelled()) {
      return absl::CancelledError(absl::StrCat("prefetch of ", pchannel_, ": no longer wanted"));
    }
  }
  int64_t loaded_revision = 0;
  {
    absl::MutexLock lock(&mu_);
    if (taken_) {
      return absl::FailedPreconditionError(absl::StrCat("prefetch of ", pchannel_, ": taken"));
    }
    if (!loaded_.ok()) {
      settled_ = true;
      return loaded_.status();
    }
    if (loaded_->has_value()) loaded_revision = (*loaded_)->mod_revision;
  }
  // The key read again now that the WAL is open: the previous owner can no longer change it
  // unnoticed (a commit of its own after this fails, or is overwritten, as without a prefetch).
  const absl::StatusOr<int64_t> revision = CheckpointRevision(options_, pchannel_);
  if (!revision.ok()) return revision.status();  // not settled: the next caller tries again
  absl::MutexLock lock(&mu_);
  if (taken_) {
    return absl::FailedPreconditionError(absl::StrCat("prefetch of ", pchannel_, ": taken"));
  }
  settled_ = true;
  if (*revision != loaded_revision) {
    loaded_ = absl::AbortedError(absl::StrCat("prefetch of ", pchannel_, ": its checkpoint was at ",
                                              loaded_revision, ", it is at ", *revision, " now"));
    return loaded_.status();
  }
  taken_ = true;
  return std::move(loaded_);
}

}  // namespace kf::query
