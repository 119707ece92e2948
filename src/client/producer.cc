#include "kingfisher/producer.h"

#include <memory>
#include <utility>

namespace kingfisher {

std::future<absl::StatusOr<AppendResult>> Producer::Append(Message message, AppendOptions options) {
  auto promise = std::make_shared<std::promise<absl::StatusOr<AppendResult>>>();
  auto future = promise->get_future();
  AppendAsync(
      std::move(message),
      [promise](absl::StatusOr<AppendResult> r) mutable { promise->set_value(std::move(r)); },
      std::move(options));
  return future;
}

absl::StatusOr<AppendResult> Producer::AppendSync(Message message, AppendOptions options) {
  return Append(std::move(message), std::move(options)).get();
}

}  // namespace kingfisher
