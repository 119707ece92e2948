#include "streaming/ddl/producer_appender.h"

#include <utility>

#include "client/client_internal.h"

namespace kf::streaming::ddl {

ProducerAppender::ProducerAppender(kingfisher::ClientOptions options)
    : options_(std::move(options)) {}

ProducerAppender::~ProducerAppender() { Close(); }

absl::Status ProducerAppender::Open(const std::string& endpoint) {
  kingfisher::ClientOptions options = options_;
  options.endpoint = endpoint;
  absl::StatusOr<std::unique_ptr<kingfisher::Client>> client =
      kingfisher::Client::Connect(std::move(options));
  if (!client.ok()) return client.status();
  std::unique_ptr<kf::client::ProducerImpl> producer = kf::client::NewProducer(**client);
  absl::MutexLock l(&mu_);
  if (closed_ || producer_ != nullptr) {
    return absl::FailedPreconditionError("broadcast appender already opened or closed");
  }
  client_ = *std::move(client);
  producer_ = std::move(producer);
  return absl::OkStatus();
}

void ProducerAppender::AppendAsync(const trace::Context& ctx, MutableMessage message,
                                   absl::Time deadline, Done done) {
  std::shared_ptr<kf::client::ProducerImpl> producer;
  {
    absl::MutexLock l(&mu_);
    producer = producer_;
  }
  if (producer == nullptr) {
    std::move(done)(absl::UnavailableError("broadcast appender is not open"));
    return;
  }
  producer->AppendMessage(
      std::move(message),
      [done = std::move(done)](absl::StatusOr<kingfisher::AppendResult> r) mutable {
        if (!r.ok()) {
          std::move(done)(r.status());
          return;
        }
        std::move(done)(BroadcastAppendResult{r->id, r->timetick, r->last_confirmed});
      },
      deadline, ctx);
}

void ProducerAppender::Close() {
  std::shared_ptr<kf::client::ProducerImpl> producer;
  std::unique_ptr<kingfisher::Client> client;
  {
    absl::MutexLock l(&mu_);
    closed_ = true;
    producer = std::move(producer_);
    client = std::move(client_);
  }
  // Outside mu_: Close waits for the pending callbacks.
  if (producer != nullptr) producer->Close();
}

}  // namespace kf::streaming::ddl
