#include "streaming/ddl/producer_appender.h"

#include <utility>

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
  absl::StatusOr<std::unique_ptr<kingfisher::Producer>> producer = (*client)->CreateProducer();
  if (!producer.ok()) return producer.status();
  absl::MutexLock l(&mu_);
  if (closed_ || producer_ != nullptr) {
    return absl::FailedPreconditionError("broadcast appender already opened or closed");
  }
  client_ = *std::move(client);
  producer_ = *std::move(producer);
  return absl::OkStatus();
}

void ProducerAppender::AppendAsync(const trace::Context& ctx, MutableMessage message,
                                   absl::Time deadline, Done done) {
  std::shared_ptr<kingfisher::Producer> producer;
  {
    absl::MutexLock l(&mu_);
    producer = producer_;
  }
  if (producer == nullptr) {
    std::move(done)(absl::UnavailableError("broadcast appender is not open"));
    return;
  }
  kingfisher::AppendOptions options;
  options.deadline = deadline;
  options.trace = ctx;
  producer->AppendAsync(
      std::move(message),
      [done = std::move(done)](absl::StatusOr<kingfisher::AppendResult> r) mutable {
        if (!r.ok()) {
          std::move(done)(r.status());
          return;
        }
        std::move(done)(BroadcastAppendResult{r->id, r->timetick, r->last_confirmed});
      },
      std::move(options));
}

void ProducerAppender::Close() {
  std::shared_ptr<kingfisher::Producer> producer;
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
