#include "wal/backends/quorum/logstore_client.h"

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "grpcpp/grpcpp.h"
#include "kingfisher/v1/logstore.grpc.pb.h"
#include "wire/channel_args.h"
#include "wire/credentials.h"
#include "wire/status_convert.h"

namespace kf::wal::quorum {

struct LogStoreClient::Stub {
  std::unique_ptr<kingfisher::v1::LogStore::Stub> stub;
};

LogStoreClient::LogStoreClient(std::string address,
                               std::shared_ptr<grpc::ChannelCredentials> credentials)
    : address_(std::move(address)), stub_(std::make_unique<Stub>()) {
  // A restarted logstore is reachable again within a second.
  auto channel = grpc::CreateCustomChannel(address_, wire::OrPlaintext(std::move(credentials)),
                                           wire::PeerChannelArguments());
  stub_->stub = kingfisher::v1::LogStore::NewStub(channel);
}

LogStoreClient::~LogStoreClient() = default;

template <typename Resp, typename Call>
absl::StatusOr<Resp> LogStoreClient::Invoke(absl::Time deadline, Call call) {
  grpc::ClientContext ctx;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  Resp resp;
  grpc::Status st = call(&ctx, &resp);
  const bool reached = st.error_code() != grpc::StatusCode::UNAVAILABLE &&
                       st.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED;
  healthy_.store(reached, std::memory_order_relaxed);
  if (!st.ok()) {
    return WithContext(kf::wire::FromGrpcStatus(st), "logstore " + address_);
  }
  return resp;
}

absl::StatusOr<kingfisher::v1::AddEntriesResponse> LogStoreClient::AddEntries(
    const kingfisher::v1::AddEntriesRequest& req, absl::Time deadline) {
  return Invoke<kingfisher::v1::AddEntriesResponse>(
      deadline, [&](auto* ctx, auto* resp) { return stub_->stub->AddEntries(ctx, req, resp); });
}

absl::StatusOr<kingfisher::v1::FenceResponse> LogStoreClient::Fence(
    const kingfisher::v1::FenceRequest& req, absl::Time deadline) {
  return Invoke<kingfisher::v1::FenceResponse>(
      deadline, [&](auto* ctx, auto* resp) { return stub_->stub->Fence(ctx, req, resp); });
}

absl::StatusOr<kingfisher::v1::ReadEntriesResponse> LogStoreClient::ReadEntries(
    const kingfisher::v1::ReadEntriesRequest& req, absl::Time deadline) {
  return Invoke<kingfisher::v1::ReadEntriesResponse>(
      deadline, [&](auto* ctx, auto* resp) { return stub_->stub->ReadEntries(ctx, req, resp); });
}

absl::Status LogStoreClient::Seal(const kingfisher::v1::SealRequest& req, absl::Time deadline) {
  return Invoke<kingfisher::v1::SealResponse>(
             deadline, [&](auto* ctx, auto* resp) { return stub_->stub->Seal(ctx, req, resp); })
      .status();
}

absl::Status LogStoreClient::DeleteSegment(const kingfisher::v1::DeleteSegmentRequest& req,
                                           absl::Time deadline) {
  return Invoke<kingfisher::v1::DeleteSegmentResponse>(
             deadline,
             [&](auto* ctx, auto* resp) { return stub_->stub->DeleteSegment(ctx, req, resp); })
      .status();
}

std::shared_ptr<LogStoreClient> LogStorePool::Get(const std::string& address) {
  absl::MutexLock l(&mu_);
  auto& c = clients_[address];
  if (c == nullptr) c = std::make_shared<LogStoreClient>(address, credentials_);
  return c;
}

}  // namespace kf::wal::quorum
