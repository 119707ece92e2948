// FutureOfAppend: the future-returning form of a callback-style append (Producer::Append,
// Transaction::Append). Header-only; thread-safe as the start function is.
#pragma once

#include <future>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "kingfisher/producer.h"

namespace kf::client {

// Calls `start(callback)` once and returns a future of the result the callback receives.
template <typename Start>
std::future<absl::StatusOr<kingfisher::AppendResult>> FutureOfAppend(Start&& start) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<kingfisher::AppendResult>>>();
  auto future = promise->get_future();
  std::forward<Start>(start)([promise](absl::StatusOr<kingfisher::AppendResult> r) mutable {
    promise->set_value(std::move(r));
  });
  return future;
}

}  // namespace kf::client
