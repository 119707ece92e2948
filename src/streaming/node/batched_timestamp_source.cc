#include "streaming/node/batched_timestamp_source.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kf::streaming {

BatchedTimestampSource::BatchedTimestampSource(TimestampBatchFetcher* fetcher, Options options)
    : fetcher_(fetcher), options_(std::move(options)) {}

absl::StatusOr<TimeTick> OracleTimestampSource::Allocate(uint32_t count) {
  if (count == 0) return absl::InvalidArgumentError("allocate count must be >= 1");
  absl::StatusOr<TimestampBatchFetcher::Batch> b =
      fetcher_->Fetch(count, TimeTick(0), absl::Now() + fetch_timeout_);
  if (!b.ok()) return b.status();
  if (b->count < count) {
    return absl::InternalError(
        absl::StrCat("timestamp oracle returned ", b->count, " timeticks, need ", count));
  }
  return b->first;
}

absl::StatusOr<TimeTick> BatchedTimestampSource::Allocate(uint32_t count) {
  if (count == 0) return absl::InvalidArgumentError("allocate count must be >= 1");
  absl::MutexLock l(&mu_);
  const absl::Time now = Now();
  if (remaining_ < count || now - fetched_at_ > options_.max_age) {
    absl::StatusOr<TimestampBatchFetcher::Batch> b = fetcher_->Fetch(
        std::max(count, options_.batch), TimeTick(floor_), now + options_.fetch_timeout);
    if (!b.ok()) return b.status();
    // Trust, but verify: a batch at or below what we handed out would break monotonicity.
    if (b->count < count || b->first.value() <= floor_) {
      return absl::InternalError(absl::StrCat("timestamp oracle returned ", b->count,
                                              " timeticks from ", b->first.value(), ", need ",
                                              count, " above ", floor_));
    }
    next_ = b->first.value();
    remaining_ = b->count;
    fetched_at_ = now;
  }
  const uint64_t first = next_;
  next_ += count;
  remaining_ -= count;
  floor_ = next_ - 1;
  return TimeTick(first);
}

void BatchedTimestampSource::DropBatchBelow(TimeTick t) {
  absl::MutexLock l(&mu_);
  if (remaining_ > 0 && next_ + remaining_ - 1 <= t.value()) remaining_ = 0;
}

absl::Status BatchedTimestampSource::Observe(TimeTick t) {
  absl::MutexLock l(&mu_);
  floor_ = std::max(floor_, t.value());
  if (remaining_ > 0 && next_ <= floor_) remaining_ = 0;  // the batch is not above t
  return absl::OkStatus();
}

}  // namespace kf::streaming
