#include "kingfisher/client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "client/client_impl.h"
#include "client/client_internal.h"
#include "client/consumer_impl.h"
#include "client/producer_impl.h"
#include "common/errors.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "message/validate.h"
#include "wire/channel_args.h"
#include "wire/credentials.h"
#include "wire/status_convert.h"

namespace kingfisher {

Client::Client(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Client::~Client() = default;

const ClientOptions& Client::options() const { return impl_->options_; }

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(ClientOptions options) {
  return kf::client::ConnectWith(std::move(options), nullptr);
}

}  // namespace kingfisher

namespace kf::client {

absl::StatusOr<std::unique_ptr<kingfisher::Client>> ConnectWith(kingfisher::ClientOptions options,
                                                                LocalTransport local) {
  using kingfisher::Duration;
  using kingfisher::RetryPolicy;
  if (options.endpoint.empty()) return absl::InvalidArgumentError("empty endpoint");
  if (options.append_timeout <= Duration::zero() || options.attempt_timeout <= Duration::zero() ||
      options.status_timeout <= Duration::zero() || options.ddl_timeout <= Duration::zero()) {
    return absl::InvalidArgumentError("client timeouts must be positive");
  }
  const RetryPolicy& r = options.retry;
  if (r.initial_backoff < Duration::zero() || r.max_backoff < r.initial_backoff ||
      r.multiplier < 1.0 || r.max_attempts < 0) {
    return absl::InvalidArgumentError(
        "bad retry policy: need 0 <= initial_backoff <= max_backoff, multiplier >= 1, "
        "max_attempts >= 0");
  }
  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> credentials =
      wire::ChannelCredentials(options.tls);
  if (!credentials.ok()) return credentials.status();
  auto router = std::make_shared<Router>(options.endpoint, wire::PeerChannelArguments(),
                                         *std::move(credentials));
  return std::make_unique<kingfisher::Client>(std::make_unique<kingfisher::Client::Impl>(
      std::move(options), std::move(router), std::move(local)));
}

std::unique_ptr<ProducerImpl> NewProducer(const kingfisher::Client& client,
                                          kingfisher::ProducerOptions options) {
  const kingfisher::Client::Impl& impl = client.impl();
  return std::make_unique<ProducerImpl>(impl.router_, impl.local_, impl.options_,
                                        std::move(options), impl.session_);
}

}  // namespace kf::client

namespace kingfisher {

absl::StatusOr<std::unique_ptr<Producer>> Client::CreateProducer(ProducerOptions options) {
  const BatchingOptions& b = options.batching;
  if (b.max_inflight_requests < 1 || b.max_messages < 1 || b.max_bytes < 1) {
    return kf::StreamingError(kf::StreamingCode::kInvalidArgument,
                              "ProducerOptions::batching: every bound must be at least 1");
  }
  return std::unique_ptr<Producer>(kf::client::NewProducer(*this, std::move(options)));
}

absl::StatusOr<std::unique_ptr<Consumer>> Client::CreateConsumer(ConsumerOptions options) {
  std::string pchannel;
  if (auto p = kf::PChannelOfVChannel(options.vchannel); p.ok()) {
    pchannel = *std::move(p);
  } else if (kf::PChannelOfVChannel(options.vchannel + "_x").value_or("") == options.vchannel) {
    pchannel = options.vchannel;  // a pchannel name: read all of it
  } else {
    return p.status();
  }
  using K = DeliverPolicy::Kind;
  if ((options.policy.kind == K::kStartFrom || options.policy.kind == K::kStartAfter) &&
      !options.policy.id.valid()) {
    return kf::StreamingError(kf::StreamingCode::kInvalidArgument,
                              "StartFrom/StartAfter need a valid message id");
  }
  return std::unique_ptr<Consumer>(new kf::client::ConsumerImpl(
      impl_->router_, impl_->local_, impl_->options_, std::move(options), std::move(pchannel)));
}

absl::StatusOr<ClusterStatus> Client::GetStatus() {
  auto stub = kingfisher::v1::StreamingCoord::NewStub(impl_->router_->endpoint_channel());
  grpc::ClientContext ctx;
  ctx.set_deadline(Clock::now() + impl_->options_.status_timeout);
  kingfisher::v1::GetStatusRequest req;
  kingfisher::v1::GetStatusResponse resp;
  grpc::Status st = stub->GetStatus(&ctx, req, &resp);
  if (!st.ok()) return kf::wire::FromGrpcStatus(st);
  ClusterStatus out;
  for (const auto& n : resp.nodes()) out.nodes.push_back({n.id(), n.address(), n.state()});
  for (const auto& p : resp.pchannels()) {
    PChannelStatus& status = out.pchannels.emplace_back(PChannelStatus{
        .pchannel = p.pchannel(), .node = p.node(), .term = p.term(), .state = p.state()});
    if (!p.has_data()) continue;
    const kingfisher::v1::PChannelDataStatus& d = p.data();
    PChannelData& data =
        status.data.emplace(PChannelData{.wal_bytes = d.wal_bytes(),
                                         .tsafe = d.tsafe(),
                                         .checkpoint_timetick = d.checkpoint_timetick(),
                                         .checkpoint_lag_seconds = d.checkpoint_lag_seconds(),
                                         .checkpoint_lag_messages = d.checkpoint_lag_messages(),
                                         .last_checkpoint_unix_ms = d.last_checkpoint_unix_ms(),
                                         .replay_from = d.replay_from(),
                                         .truncated_below = d.truncated_below(),
                                         .last_checkpoint_error = d.last_checkpoint_error()});
    for (const kingfisher::v1::ShardStatus& s : d.shards()) {
      data.shards.push_back({.vchannel = s.vchannel(),
                             .collection_id = s.collection_id(),
                             .rows = s.rows(),
                             .memory_bytes = s.memory_bytes(),
                             .sealed_segments = s.sealed_segments(),
                             .flushed_segments = s.flushed_segments()});
    }
  }
  return out;
}

}  // namespace kingfisher
