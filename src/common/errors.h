// The streaming error codes of docs/semantics.md §3 and their one mapping onto gRPC / absl codes.
//
// Every error that crosses a module or process boundary is an absl::Status whose code is the
// gRPC code of the table below; the streaming code rides along as a status payload so the
// client can tell CHANNEL_FENCED from TRANSACTION_EXPIRED (both ABORTED). Over gRPC the payload
// travels in the error details (src/rpc).
#pragma once

#include <optional>
#include <string_view>

#include "absl/status/status.h"

namespace kf {

enum class StreamingCode : int {
  kOk = 0,
  kChannelNotExist = 1,          // pchannel not on this node          -> ABORTED
  kUnmatchedChannelTerm = 2,     // request carries another term        -> ABORTED
  kChannelFenced = 3,            // ownership taken over (FENCED)       -> ABORTED
  kOnShutdown = 4,               // server stopping                     -> UNAVAILABLE
  kRateLimited = 5,              // back-pressure                       -> RESOURCE_EXHAUSTED
  kTransactionExpired = 6,       //                                     -> ABORTED
  kInvalidTransactionState = 7,  //                                     -> FAILED_PRECONDITION
  kCollectionNotFound = 8,       //                                     -> NOT_FOUND
  kCollectionExists = 9,         //                                     -> ALREADY_EXISTS
  kResourceAcquired = 10,        // non-blocking DDL on a locked key    -> ABORTED
  kInvalidArgument = 11,         //                                     -> INVALID_ARGUMENT
  kDataLoss = 12,                // checksum, missing data              -> DATA_LOSS
  kUnrecoverable = 13,           //                                     -> INTERNAL
  kInner = 14,                   //                                     -> INTERNAL
  kTransport = 15,               // connection loss, deadline           -> UNAVAILABLE
  kOutOfRange = 16,              // a read below the WAL's truncation   -> OUT_OF_RANGE
  kReplicateViolation = 17,      // a write against the replicate role  -> FAILED_PRECONDITION
  kIgnoredOperation = 18,        // already replicated: nothing appended -> ALREADY_EXISTS
};
inline constexpr StreamingCode kLastStreamingCode = StreamingCode::kIgnoredOperation;

// The gRPC/absl code a streaming code maps to (docs/semantics.md §3 table).
absl::StatusCode ToStatusCode(StreamingCode code);

// Upper-case name as in docs/semantics.md §3 ("CHANNEL_FENCED"); "UNKNOWN" for out-of-range values.
std::string_view StreamingCodeName(StreamingCode code);

// Builds a status with the mapped code, `message`, and the streaming code attached.
absl::Status StreamingError(StreamingCode code, std::string_view message);

// The streaming code carried by `status`; derived from the status code when none is attached
// (e.g. INVALID_ARGUMENT -> kInvalidArgument, UNAVAILABLE -> kTransport).
StreamingCode GetStreamingCode(const absl::Status& status);

// `status` with "`context`: " before its message; code and payloads (the streaming code) kept.
absl::Status WithContext(const absl::Status& status, std::string_view context);

// Shorthands for the codes used all over the WAL.
inline absl::Status FencedError(std::string_view m) {
  return StreamingError(StreamingCode::kChannelFenced, m);
}
inline bool IsFenced(const absl::Status& s) {
  return GetStreamingCode(s) == StreamingCode::kChannelFenced;
}
// True for failures after which the operation may or may not have happened and a retry with
// the same idempotency key is safe and useful (UNAVAILABLE, DEADLINE_EXCEEDED).
bool IsAmbiguous(const absl::Status& status);

}  // namespace kf
