#include "common/errors.h"

#include "gtest/gtest.h"

namespace kf {
namespace {

TEST(Errors, TableMapping) {
  EXPECT_EQ(ToStatusCode(StreamingCode::kChannelFenced), absl::StatusCode::kAborted);
  EXPECT_EQ(ToStatusCode(StreamingCode::kOnShutdown), absl::StatusCode::kUnavailable);
  EXPECT_EQ(ToStatusCode(StreamingCode::kRateLimited), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(ToStatusCode(StreamingCode::kInvalidTransactionState),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(ToStatusCode(StreamingCode::kCollectionNotFound), absl::StatusCode::kNotFound);
  EXPECT_EQ(ToStatusCode(StreamingCode::kDataLoss), absl::StatusCode::kDataLoss);
  EXPECT_EQ(ToStatusCode(StreamingCode::kInner), absl::StatusCode::kInternal);
}

TEST(Errors, StreamingCodeSurvivesInStatus) {
  absl::Status s = StreamingError(StreamingCode::kTransactionExpired, "late body");
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted);
  EXPECT_EQ(GetStreamingCode(s), StreamingCode::kTransactionExpired);
  EXPECT_FALSE(IsFenced(s));
  EXPECT_TRUE(IsFenced(FencedError("x")));
  EXPECT_EQ(GetStreamingCode(absl::UnavailableError("x")), StreamingCode::kTransport);
  EXPECT_TRUE(IsAmbiguous(absl::DeadlineExceededError("x")));
  EXPECT_FALSE(IsAmbiguous(FencedError("x")));
  EXPECT_EQ(StreamingCodeName(StreamingCode::kChannelFenced), "CHANNEL_FENCED");
}

TEST(Errors, WithContextKeepsCodeAndStreamingCode) {
  absl::Status s = WithContext(FencedError("term 5 exists"), "open kf-dml_0 at term 1");
  EXPECT_TRUE(IsFenced(s));
  EXPECT_EQ(s.message(), "open kf-dml_0 at term 1: term 5 exists");
  EXPECT_TRUE(WithContext(absl::OkStatus(), "x").ok());
}

}  // namespace
}  // namespace kf
