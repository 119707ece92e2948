#include "collections_rpc.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "wire/status_convert.h"

namespace kf::testing {
namespace {

namespace v1 = kingfisher::v1;

std::unique_ptr<grpc::ClientContext> Ctx() {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(30)));
  return ctx;
}

}  // namespace

CollectionsRpc::CollectionsRpc(const std::string& address)
    : stub_(v1::Collections::NewStub(
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

absl::StatusOr<v1::CollectionInfo> CollectionsRpc::Create(const std::string& name, uint32_t dim,
                                                          v1::MetricType metric, uint32_t shards) {
  v1::CreateCollectionRequest r;
  r.set_name(name);
  r.set_dim(dim);
  r.set_metric(metric);
  r.set_shards(shards);
  v1::CreateCollectionResponse resp;
  absl::Status s = kf::wire::FromGrpcStatus(stub_->CreateCollection(Ctx().get(), r, &resp));
  if (!s.ok()) return s;
  return resp.collection();
}

absl::StatusOr<v1::CollectionInfo> CollectionsRpc::Describe(const std::string& name) {
  v1::DescribeCollectionRequest r;
  r.set_name(name);
  v1::DescribeCollectionResponse resp;
  absl::Status s = kf::wire::FromGrpcStatus(stub_->DescribeCollection(Ctx().get(), r, &resp));
  if (!s.ok()) return s;
  return resp.collection();
}

absl::Status CollectionsRpc::Drop(const std::string& name) {
  v1::DropCollectionRequest r;
  r.set_name(name);
  v1::DropCollectionResponse resp;
  return kf::wire::FromGrpcStatus(stub_->DropCollection(Ctx().get(), r, &resp));
}

absl::StatusOr<std::vector<v1::CollectionInfo>> CollectionsRpc::List() {
  v1::ListCollectionsResponse resp;
  absl::Status s = kf::wire::FromGrpcStatus(
      stub_->ListCollections(Ctx().get(), v1::ListCollectionsRequest(), &resp));
  if (!s.ok()) return s;
  return std::vector<v1::CollectionInfo>(resp.collections().begin(), resp.collections().end());
}

}  // namespace kf::testing
