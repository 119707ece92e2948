#include "client/retry.h"

#include <chrono>

#include "common/errors.h"
#include "gtest/gtest.h"

namespace kf::client {
namespace {

TEST(RetryTest, ClassifiesBySpecTable) {
  EXPECT_TRUE(IsRetryableAppendError(absl::UnavailableError("x")));
  EXPECT_TRUE(IsRetryableAppendError(absl::DeadlineExceededError("x")));
  EXPECT_TRUE(IsRetryableAppendError(StreamingError(StreamingCode::kOnShutdown, "x")));
  EXPECT_TRUE(IsRetryableAppendError(StreamingError(StreamingCode::kChannelFenced, "x")));
  EXPECT_TRUE(IsRetryableAppendError(StreamingError(StreamingCode::kChannelNotExist, "x")));
  EXPECT_TRUE(IsRetryableAppendError(StreamingError(StreamingCode::kUnmatchedChannelTerm, "x")));
  EXPECT_TRUE(IsRetryableAppendError(StreamingError(StreamingCode::kRateLimited, "x")));
  EXPECT_FALSE(IsRetryableAppendError(StreamingError(StreamingCode::kTransactionExpired, "x")));
  EXPECT_FALSE(IsRetryableAppendError(StreamingError(StreamingCode::kResourceAcquired, "x")));
  EXPECT_FALSE(IsRetryableAppendError(absl::InvalidArgumentError("x")));
  EXPECT_FALSE(IsRetryableAppendError(absl::FailedPreconditionError("x")));
  EXPECT_FALSE(IsRetryableAppendError(absl::NotFoundError("x")));
  EXPECT_FALSE(IsRetryableAppendError(absl::DataLossError("x")));
  EXPECT_FALSE(IsRetryableAppendError(absl::InternalError("x")));
  EXPECT_FALSE(IsRetryableAppendError(absl::CancelledError("x")));
}

TEST(RetryTest, BackoffGrowsWithinBounds) {
  kingfisher::RetryPolicy p;
  p.initial_backoff = std::chrono::milliseconds(10);
  p.max_backoff = std::chrono::milliseconds(80);
  p.multiplier = 2;
  Backoff b(p);
  absl::Duration caps[] = {absl::Milliseconds(10), absl::Milliseconds(20), absl::Milliseconds(40),
                           absl::Milliseconds(80), absl::Milliseconds(80)};
  for (absl::Duration cap : caps) {
    absl::Duration d = b.Next();
    EXPECT_GE(d, cap / 2);
    EXPECT_LE(d, cap);
  }
  b.Reset();
  EXPECT_LE(b.Next(), absl::Milliseconds(10));
}

}  // namespace
}  // namespace kf::client
