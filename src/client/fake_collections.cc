#include "client/fake_collections.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "wire/status_convert.h"

namespace kf::client::testing {

namespace v1 = kingfisher::v1;

namespace {

grpc::Status WireError(StreamingCode code, const std::string& message) {
  return kf::wire::ToGrpcStatus(StreamingError(code, message));
}

}  // namespace

class FakeCollections::CollectionsService final : public v1::Collections::Service {
 public:
  explicit CollectionsService(FakeCollections* fake) : fake_(fake) {}

  grpc::Status CreateCollection(grpc::ServerContext* ctx, const v1::CreateCollectionRequest* req,
                                v1::CreateCollectionResponse* resp) override {
    Call c{.method = "CreateCollection", .database = req->database(), .name = req->name()};
    c.options = req->options();
    c.create = *req;
    if (grpc::Status s = fake_->Begin(ctx, std::move(c)); !s.ok()) return s;
    return fake_->Create(*req, resp->mutable_collection());
  }
  grpc::Status DropCollection(grpc::ServerContext* ctx, const v1::DropCollectionRequest* req,
                              v1::DropCollectionResponse*) override {
    Call c{.method = "DropCollection", .database = req->database(), .name = req->name()};
    c.options = req->options();
    if (grpc::Status s = fake_->Begin(ctx, std::move(c)); !s.ok()) return s;
    return fake_->Drop(req->name());
  }
  grpc::Status DescribeCollection(grpc::ServerContext* ctx,
                                  const v1::DescribeCollectionRequest* req,
                                  v1::DescribeCollectionResponse* resp) override {
    Call c{.method = "DescribeCollection", .database = req->database(), .name = req->name()};
    if (grpc::Status s = fake_->Begin(ctx, std::move(c)); !s.ok()) return s;
    return fake_->Describe(req->name(), resp->mutable_collection());
  }
  grpc::Status ListCollections(grpc::ServerContext* ctx, const v1::ListCollectionsRequest* req,
                               v1::ListCollectionsResponse* resp) override {
    if (grpc::Status s =
            fake_->Begin(ctx, {.method = "ListCollections", .database = req->database()});
        !s.ok()) {
      return s;
    }
    for (auto& c : fake_->collections()) *resp->add_collections() = std::move(c);
    return grpc::Status::OK;
  }
  grpc::Status CreatePartition(grpc::ServerContext* ctx, const v1::PartitionRequest* req,
                               v1::PartitionResponse*) override {
    return PartitionCall(ctx, *req, /*create=*/true);
  }
  grpc::Status DropPartition(grpc::ServerContext* ctx, const v1::PartitionRequest* req,
                             v1::PartitionResponse*) override {
    return PartitionCall(ctx, *req, /*create=*/false);
  }

 private:
  grpc::Status PartitionCall(grpc::ServerContext* ctx, const v1::PartitionRequest& req,
                             bool create) {
    Call c{.method = create ? "CreatePartition" : "DropPartition",
           .database = req.database(),
           .name = req.collection(),
           .partition = req.partition()};
    c.options = req.options();
    if (grpc::Status s = fake_->Begin(ctx, std::move(c)); !s.ok()) return s;
    return fake_->Partition(req, create);
  }

  FakeCollections* fake_;
};

class FakeCollections::CoordService final : public v1::StreamingCoord::Service {
 public:
  explicit CoordService(FakeCollections* fake) : fake_(fake) {}

  grpc::Status AllocateTimestamps(grpc::ServerContext* ctx,
                                  const v1::AllocateTimestampsRequest* req,
                                  v1::AllocateTimestampsResponse* resp) override {
    if (grpc::Status s = fake_->Begin(ctx, {.method = "AllocateTimestamps", .count = req->count()});
        !s.ok()) {
      return s;
    }
    return fake_->Allocate(req->count(), resp);
  }

 private:
  FakeCollections* fake_;
};

FakeCollections::FakeCollections()
    : collections_service_(std::make_unique<CollectionsService>(this)),
      coord_service_(std::make_unique<CoordService>(this)) {}

FakeCollections::~FakeCollections() { Release(); }

std::vector<grpc::Service*> FakeCollections::services() {
  return {collections_service_.get(), coord_service_.get()};
}

void FakeCollections::FailWith(absl::Status status, std::string method, int times) {
  absl::MutexLock l(&mu_);
  fail_ = std::move(status);
  fail_method_ = std::move(method);
  fail_times_ = times;
}

void FakeCollections::Hold() {
  absl::MutexLock l(&mu_);
  hold_ = true;
}

void FakeCollections::Release() {
  absl::MutexLock l(&mu_);
  hold_ = false;
}

void FakeCollections::AnswerTimestampCount(uint32_t count) {
  absl::MutexLock l(&mu_);
  timestamp_count_ = count;
}

void FakeCollections::SetNextTimestamp(uint64_t first) {
  absl::MutexLock l(&mu_);
  next_timestamp_ = first;
}

std::vector<FakeCollections::Call> FakeCollections::calls() const {
  absl::MutexLock l(&mu_);
  return calls_;
}

std::vector<v1::CollectionInfo> FakeCollections::collections() const {
  absl::MutexLock l(&mu_);
  std::vector<v1::CollectionInfo> out;
  for (const auto& [name, c] : catalog_) out.push_back(c);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.schema().collection_id() < b.schema().collection_id();
  });
  return out;
}

grpc::Status FakeCollections::Begin(grpc::ServerContext* ctx, Call call) {
  call.deadline = absl::FromChrono(ctx->deadline());
  const absl::Time deadline = call.deadline;
  const std::string method = call.method;
  absl::MutexLock l(&mu_);
  calls_.push_back(std::move(call));
  auto released = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !hold_; };
  if (!mu_.AwaitWithDeadline(absl::Condition(&released), deadline)) {
    return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "held past the deadline");
  }
  if (fail_.ok() || (!fail_method_.empty() && fail_method_ != method)) return grpc::Status::OK;
  const grpc::Status failed = kf::wire::ToGrpcStatus(fail_);
  if (fail_times_ > 0 && --fail_times_ == 0) fail_ = absl::OkStatus();
  return failed;
}

grpc::Status FakeCollections::Create(const v1::CreateCollectionRequest& req,
                                     v1::CollectionInfo* out) {
  absl::MutexLock l(&mu_);
  if (catalog_.contains(req.name())) {
    return WireError(StreamingCode::kCollectionExists,
                     absl::StrCat("collection '", req.name(), "' exists"));
  }
  v1::CollectionInfo info;
  info.set_database(req.database().empty() ? "default" : req.database());
  v1::CollectionSchema* schema = info.mutable_schema();
  schema->set_name(req.name());
  schema->set_collection_id(next_id_++);
  schema->set_dim(req.dim());
  schema->set_metric(req.metric());
  schema->set_shards(req.shards());
  for (uint32_t shard = 0; shard < req.shards(); ++shard) {
    schema->add_vchannels(
        absl::StrCat("kf-dml_", shard % 4, "_", schema->collection_id(), "v", shard));
  }
  info.set_state(v1::COLLECTION_CREATED);
  v1::PartitionInfo* p = info.add_partitions();
  p->set_name("_default");
  p->set_state(v1::PARTITION_CREATED);
  info.set_create_time_ms(1700000000000 + schema->collection_id());
  *out = info;
  catalog_[req.name()] = std::move(info);
  return grpc::Status::OK;
}

grpc::Status FakeCollections::Drop(const std::string& name) {
  absl::MutexLock l(&mu_);
  if (catalog_.erase(name) == 0) {
    return WireError(StreamingCode::kCollectionNotFound,
                     absl::StrCat("collection '", name, "' not found"));
  }
  return grpc::Status::OK;
}

grpc::Status FakeCollections::Describe(const std::string& name, v1::CollectionInfo* out) const {
  absl::MutexLock l(&mu_);
  auto it = catalog_.find(name);
  if (it == catalog_.end()) {
    return WireError(StreamingCode::kCollectionNotFound,
                     absl::StrCat("collection '", name, "' not found"));
  }
  *out = it->second;
  return grpc::Status::OK;
}

grpc::Status FakeCollections::Partition(const v1::PartitionRequest& req, bool create) {
  absl::MutexLock l(&mu_);
  auto it = catalog_.find(req.collection());
  if (it == catalog_.end()) {
    return WireError(StreamingCode::kCollectionNotFound,
                     absl::StrCat("collection '", req.collection(), "' not found"));
  }
  auto* parts = it->second.mutable_partitions();
  auto p = std::find_if(parts->begin(), parts->end(),
                        [&](const v1::PartitionInfo& x) { return x.name() == req.partition(); });
  if (create) {
    if (p != parts->end()) {
      return WireError(StreamingCode::kCollectionExists,
                       absl::StrCat("partition '", req.partition(), "' exists"));
    }
    v1::PartitionInfo* added = parts->Add();
    added->set_name(req.partition());
    added->set_state(v1::PARTITION_CREATED);
    return grpc::Status::OK;
  }
  if (p == parts->end()) {
    return WireError(StreamingCode::kCollectionNotFound,
                     absl::StrCat("partition '", req.partition(), "' not found"));
  }
  parts->erase(p);
  return grpc::Status::OK;
}

grpc::Status FakeCollections::Allocate(uint32_t count, v1::AllocateTimestampsResponse* out) {
  absl::MutexLock l(&mu_);
  out->set_first(next_timestamp_);
  out->set_count(timestamp_count_ != 0 ? timestamp_count_ : count);
  next_timestamp_ += count;
  return grpc::Status::OK;
}

}  // namespace kf::client::testing
