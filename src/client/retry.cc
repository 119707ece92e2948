#include "client/retry.h"

#include <algorithm>
#include <random>

#include "common/absl_compat.h"
#include "common/errors.h"

namespace kf::client {

bool IsRetryableAppendError(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
      return true;
    case absl::StatusCode::kAborted: {
      StreamingCode c = GetStreamingCode(s);
      return c != StreamingCode::kTransactionExpired && c != StreamingCode::kResourceAcquired;
    }
    default:
      return false;
  }
}

absl::Status WithMessage(const absl::Status& s, std::string_view message) {
  absl::Status out(s.code(), ToAbsl(message));
  s.ForEachPayload(
      [&out](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

bool IsRoutingError(const absl::Status& s) {
  const StreamingCode c = GetStreamingCode(s);
  return c == StreamingCode::kChannelNotExist || c == StreamingCode::kUnmatchedChannelTerm ||
         c == StreamingCode::kChannelFenced;
}

bool IsRetryableConsumeError(const absl::Status& s) { return IsRetryableAppendError(s); }

namespace {

// The jitter source, one per thread and seeded once: every append makes a Backoff, and a
// std::random_device plus a fresh engine per Backoff cost the producer microseconds per append.
std::minstd_rand& JitterRng() {
  thread_local std::minstd_rand rng(std::random_device{}());
  return rng;
}

}  // namespace

Backoff::Backoff(const kingfisher::RetryPolicy& p)
    : initial_(absl::FromChrono(p.initial_backoff)),
      max_(absl::FromChrono(p.max_backoff)),
      multiplier_(p.multiplier),
      current_(initial_) {}

absl::Duration Backoff::Next() {
  absl::Duration cap = std::min(current_, max_);
  current_ = std::min(current_ * multiplier_, max_);
  int64_t us = absl::ToInt64Microseconds(cap);
  if (us <= 0) return absl::ZeroDuration();
  std::uniform_int_distribution<int64_t> dist(us / 2, us);
  return absl::Microseconds(dist(JitterRng()));
}

}  // namespace kf::client
