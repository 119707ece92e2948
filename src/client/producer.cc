// The non-virtual conveniences of include/kingfisher/producer.h.
#include "kingfisher/producer.h"

#include <future>
#include <memory>
#include <utility>

namespace kingfisher {
namespace {

// Calls `start(callback)` once and returns a future of the result the callback receives.
template <typename Start>
std::future<absl::StatusOr<AppendResult>> FutureOf(Start&& start) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<AppendResult>>>();
  auto future = promise->get_future();
  std::forward<Start>(start)(
      [promise](absl::StatusOr<AppendResult> r) { promise->set_value(std::move(r)); });
  return future;
}

}  // namespace

std::future<absl::StatusOr<AppendResult>> Producer::Append(Message message, AppendOptions options) {
  return FutureOf([&](AppendCallback done) {
    AppendAsync(std::move(message), std::move(done), std::move(options));
  });
}

absl::StatusOr<AppendResult> Producer::AppendSync(Message message, AppendOptions options) {
  return Append(std::move(message), std::move(options)).get();
}

std::future<absl::StatusOr<AppendResult>> Transaction::Append(Message message) {
  return FutureOf([&](AppendCallback done) { AppendAsync(std::move(message), std::move(done)); });
}

absl::StatusOr<AppendResult> Transaction::AppendSync(Message message) {
  return Append(std::move(message)).get();
}

}  // namespace kingfisher
