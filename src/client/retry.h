// Which failures the client retries (the docs/semantics.md §3 table) and the backoff between
// attempts. Pure functions and a small value type: thread-compatible, no errors.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "kingfisher/client.h"

namespace kf::client {

// True for append failures worth retrying with the same `_ik`: UNAVAILABLE,
// DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, and ABORTED unless it is TRANSACTION_EXPIRED or
// RESOURCE_ACQUIRED (those need a new txn / a later decision by the caller).
bool IsRetryableAppendError(const absl::Status& s);
// True when the node no longer serves the pchannel at the term the client used
// (CHANNEL_NOT_EXIST, UNMATCHED_CHANNEL_TERM, CHANNEL_FENCED): retry on a newer assignment.
bool IsRoutingError(const absl::Status& s);
// Same classification for consume streams (a consumer re-opens after them).
bool IsRetryableConsumeError(const absl::Status& s);

// `s` with its message replaced by `message`; the code and every payload (the streaming
// code) are kept, so callers can add context without hiding what the error was.
absl::Status WithMessage(const absl::Status& s, std::string_view message);

// Exponential backoff with equal jitter: the n-th Next() returns a random duration in
// [c/2, c], c = min(max_backoff, initial_backoff * multiplier^n).
class Backoff {
 public:
  explicit Backoff(const kingfisher::RetryPolicy& p);
  absl::Duration Next();
  void Reset() { current_ = policy_.initial_backoff; }

 private:
  kingfisher::RetryPolicy policy_;
  absl::Duration current_;
};

}  // namespace kf::client
