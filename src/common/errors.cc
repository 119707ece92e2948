#include "common/errors.h"

#include <string>

#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"

namespace kf {
namespace {
constexpr char kPayloadUrl[] = "type.kingfisher.io/kingfisher.v1.StreamingCode";
}  // namespace

absl::StatusCode ToStatusCode(StreamingCode code) {
  switch (code) {
    case StreamingCode::kOk:
      return absl::StatusCode::kOk;
    case StreamingCode::kChannelNotExist:
    case StreamingCode::kUnmatchedChannelTerm:
    case StreamingCode::kChannelFenced:
    case StreamingCode::kTransactionExpired:
    case StreamingCode::kResourceAcquired:
      return absl::StatusCode::kAborted;
    case StreamingCode::kOnShutdown:
    case StreamingCode::kTransport:
      return absl::StatusCode::kUnavailable;
    case StreamingCode::kRateLimited:
      return absl::StatusCode::kResourceExhausted;
    case StreamingCode::kInvalidTransactionState:
    case StreamingCode::kReplicateViolation:
      return absl::StatusCode::kFailedPrecondition;
    case StreamingCode::kCollectionNotFound:
      return absl::StatusCode::kNotFound;
    case StreamingCode::kCollectionExists:
    case StreamingCode::kIgnoredOperation:
      return absl::StatusCode::kAlreadyExists;
    case StreamingCode::kInvalidArgument:
      return absl::StatusCode::kInvalidArgument;
    case StreamingCode::kDataLoss:
      return absl::StatusCode::kDataLoss;
    case StreamingCode::kOutOfRange:
      return absl::StatusCode::kOutOfRange;
    case StreamingCode::kUnrecoverable:
    case StreamingCode::kInner:
      return absl::StatusCode::kInternal;
  }
  return absl::StatusCode::kInternal;
}

std::string_view StreamingCodeName(StreamingCode code) {
  switch (code) {
    case StreamingCode::kOk:
      return "OK";
    case StreamingCode::kChannelNotExist:
      return "CHANNEL_NOT_EXIST";
    case StreamingCode::kUnmatchedChannelTerm:
      return "UNMATCHED_CHANNEL_TERM";
    case StreamingCode::kChannelFenced:
      return "CHANNEL_FENCED";
    case StreamingCode::kOnShutdown:
      return "ON_SHUTDOWN";
    case StreamingCode::kRateLimited:
      return "RATE_LIMITED";
    case StreamingCode::kTransactionExpired:
      return "TRANSACTION_EXPIRED";
    case StreamingCode::kInvalidTransactionState:
      return "INVALID_TRANSACTION_STATE";
    case StreamingCode::kCollectionNotFound:
      return "COLLECTION_NOT_FOUND";
    case StreamingCode::kCollectionExists:
      return "COLLECTION_EXISTS";
    case StreamingCode::kResourceAcquired:
      return "RESOURCE_ACQUIRED";
    case StreamingCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case StreamingCode::kDataLoss:
      return "DATA_LOSS";
    case StreamingCode::kUnrecoverable:
      return "UNRECOVERABLE";
    case StreamingCode::kInner:
      return "INNER";
    case StreamingCode::kTransport:
      return "TRANSPORT";
    case StreamingCode::kOutOfRange:
      return "OUT_OF_RANGE";
    case StreamingCode::kReplicateViolation:
      return "REPLICATE_VIOLATION";
    case StreamingCode::kIgnoredOperation:
      return "IGNORED_OPERATION";
  }
  return "UNKNOWN";
}

absl::Status StreamingError(StreamingCode code, std::string_view message) {
  absl::Status s(ToStatusCode(code), ToAbsl(message));
  if (!s.ok()) s.SetPayload(kPayloadUrl, absl::Cord(std::to_string(static_cast<int>(code))));
  return s;
}

absl::Status WithContext(const absl::Status& status, std::string_view context) {
  if (status.ok()) return status;
  absl::Status out(status.code(), absl::StrCat(ToAbsl(context), ": ", status.message()));
  status.ForEachPayload(
      [&](absl::string_view url, const absl::Cord& payload) { out.SetPayload(url, payload); });
  return out;
}

StreamingCode GetStreamingCode(const absl::Status& status) {
  if (auto p = status.GetPayload(kPayloadUrl)) {
    int v = 0;
    if (absl::SimpleAtoi(std::string(*p), &v) && v >= 0 &&
        v <= static_cast<int>(kLastStreamingCode)) {
      return static_cast<StreamingCode>(v);
    }
  }
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return StreamingCode::kOk;
    case absl::StatusCode::kInvalidArgument:
      return StreamingCode::kInvalidArgument;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
      return StreamingCode::kTransport;
    case absl::StatusCode::kResourceExhausted:
      return StreamingCode::kRateLimited;
    case absl::StatusCode::kDataLoss:
      return StreamingCode::kDataLoss;
    case absl::StatusCode::kNotFound:
      return StreamingCode::kCollectionNotFound;
    case absl::StatusCode::kAlreadyExists:
      return StreamingCode::kCollectionExists;
    case absl::StatusCode::kFailedPrecondition:
      return StreamingCode::kInvalidTransactionState;
    case absl::StatusCode::kOutOfRange:
      return StreamingCode::kOutOfRange;
    default:
      return StreamingCode::kInner;
  }
}

bool IsAmbiguous(const absl::Status& status) {
  return status.code() == absl::StatusCode::kUnavailable ||
         status.code() == absl::StatusCode::kDeadlineExceeded;
}

}  // namespace kf
