#include "wire/status_convert.h"

#include <gtest/gtest.h>

#include "common/errors.h"

namespace kf::wire {
namespace {

struct Row {
  StreamingCode code;
  grpc::StatusCode grpc_code;
};

// docs/semantics.md §3: the one mapping, checked in both directions through every representation.
const Row kTable[] = {
    {StreamingCode::kChannelNotExist, grpc::StatusCode::ABORTED},
    {StreamingCode::kUnmatchedChannelTerm, grpc::StatusCode::ABORTED},
    {StreamingCode::kChannelFenced, grpc::StatusCode::ABORTED},
    {StreamingCode::kOnShutdown, grpc::StatusCode::UNAVAILABLE},
    {StreamingCode::kTransport, grpc::StatusCode::UNAVAILABLE},
    {StreamingCode::kOutOfRange, grpc::StatusCode::OUT_OF_RANGE},
    {StreamingCode::kRateLimited, grpc::StatusCode::RESOURCE_EXHAUSTED},
    {StreamingCode::kTransactionExpired, grpc::StatusCode::ABORTED},
    {StreamingCode::kInvalidTransactionState, grpc::StatusCode::FAILED_PRECONDITION},
    {StreamingCode::kCollectionNotFound, grpc::StatusCode::NOT_FOUND},
    {StreamingCode::kCollectionExists, grpc::StatusCode::ALREADY_EXISTS},
    {StreamingCode::kResourceAcquired, grpc::StatusCode::ABORTED},
    {StreamingCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
    {StreamingCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
    {StreamingCode::kUnrecoverable, grpc::StatusCode::INTERNAL},
    {StreamingCode::kInner, grpc::StatusCode::INTERNAL},
    {StreamingCode::kReplicateViolation, grpc::StatusCode::FAILED_PRECONDITION},
    {StreamingCode::kIgnoredOperation, grpc::StatusCode::ALREADY_EXISTS},
};

TEST(StatusConvertTest, EveryStreamingCodeRoundTripsThroughGrpc) {
  for (const Row& row : kTable) {
    SCOPED_TRACE(std::string(StreamingCodeName(row.code)));
    absl::Status original = StreamingError(row.code, "boom");
    grpc::Status wire = ToGrpcStatus(original);
    EXPECT_EQ(wire.error_code(), row.grpc_code);
    EXPECT_EQ(wire.error_message(), "boom");
    EXPECT_FALSE(wire.error_details().empty());

    absl::Status back = FromGrpcStatus(wire);
    EXPECT_EQ(static_cast<int>(back.code()), static_cast<int>(row.grpc_code));
    EXPECT_EQ(GetStreamingCode(back), row.code);
    EXPECT_EQ(back.message(), "boom");
  }
}

TEST(StatusConvertTest, EveryStreamingCodeRoundTripsThroughProtoError) {
  for (const Row& row : kTable) {
    SCOPED_TRACE(std::string(StreamingCodeName(row.code)));
    kingfisher::v1::Error e = ToProtoError(StreamingError(row.code, "m"));
    EXPECT_EQ(e.grpc_code(), static_cast<int>(row.grpc_code));
    EXPECT_EQ(e.streaming_code(), static_cast<int>(row.code));
    EXPECT_EQ(e.message(), "m");
    absl::Status back = FromProtoError(e);
    EXPECT_EQ(GetStreamingCode(back), row.code);
    EXPECT_EQ(static_cast<int>(back.code()), static_cast<int>(row.grpc_code));
  }
}

TEST(StatusConvertTest, OkIsOk) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(FromGrpcStatus(grpc::Status::OK).ok());
}

TEST(StatusConvertTest, PlainStatusGetsDerivedStreamingCode) {
  kingfisher::v1::Error e = ToProtoError(absl::InvalidArgumentError("bad"));
  EXPECT_EQ(e.streaming_code(), static_cast<int>(StreamingCode::kInvalidArgument));
  EXPECT_EQ(e.grpc_code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
}

TEST(StatusConvertTest, TransportFailureWithoutDetailsIsTransport) {
  absl::Status s = FromGrpcStatus(grpc::Status(grpc::StatusCode::UNAVAILABLE, "conn refused"));
  EXPECT_TRUE(absl::IsUnavailable(s));
  EXPECT_EQ(GetStreamingCode(s), StreamingCode::kTransport);
  EXPECT_TRUE(IsAmbiguous(s));
}

TEST(StatusConvertTest, GarbageDetailsKeepTheGrpcCode) {
  absl::Status s =
      FromGrpcStatus(grpc::Status(grpc::StatusCode::ABORTED, "x", std::string("\xff\xff\xff", 3)));
  EXPECT_TRUE(absl::IsAborted(s));
  EXPECT_EQ(s.message(), "x");
}

TEST(StatusConvertTest, StreamingCodeWinsOverInconsistentGrpcCode) {
  kingfisher::v1::Error e;
  e.set_grpc_code(static_cast<int>(absl::StatusCode::kInternal));
  e.set_streaming_code(static_cast<int>(StreamingCode::kChannelFenced));
  e.set_message("fenced");
  absl::Status s = FromProtoError(e);
  EXPECT_TRUE(absl::IsAborted(s));
  EXPECT_TRUE(IsFenced(s));
}

TEST(StatusConvertTest, ErrorClaimingOkIsMalformed) {
  kingfisher::v1::Error e;
  e.set_message("huh");
  absl::Status s = FromProtoError(e);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kUnknown);
}

TEST(StatusConvertTest, GrpcCodeOnlyErrorKeepsItsCode) {
  kingfisher::v1::Error e;
  e.set_grpc_code(static_cast<int>(absl::StatusCode::kDeadlineExceeded));
  e.set_message("late");
  absl::Status s = FromProtoError(e);
  EXPECT_TRUE(absl::IsDeadlineExceeded(s));
  EXPECT_TRUE(IsAmbiguous(s));
}

}  // namespace
}  // namespace kf::wire
