#include "kingfisher/producer.h"

#include <utility>

#include "client/append_future.h"

namespace kingfisher {

std::future<absl::StatusOr<AppendResult>> Producer::Append(Message message, AppendOptions options) {
  return kf::client::FutureOfAppend([&](AppendCallback done) {
    AppendAsync(std::move(message), std::move(done), std::move(options));
  });
}

absl::StatusOr<AppendResult> Producer::AppendSync(Message message, AppendOptions options) {
  return Append(std::move(message), std::move(options)).get();
}

std::future<absl::StatusOr<AppendResult>> Transaction::Append(Message message) {
  return kf::client::FutureOfAppend(
      [&](AppendCallback done) { AppendAsync(std::move(message), std::move(done)); });
}

absl::StatusOr<AppendResult> Transaction::AppendSync(Message message) {
  return Append(std::move(message)).get();
}

}  // namespace kingfisher
