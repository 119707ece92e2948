#include "logstore/service/logstore_service.h"

#include <string_view>
#include <vector>

#include "wire/status_convert.h"

namespace kf::logstore {

grpc::Status LogStoreService::AddEntries(grpc::ServerContext*,
                                         const kingfisher::v1::AddEntriesRequest* req,
                                         kingfisher::v1::AddEntriesResponse* resp) {
  std::vector<std::string_view> entries(req->entries().begin(), req->entries().end());
  auto end =
      store_->AddEntries(req->log(), req->segment(), req->epoch(), req->first_entry(), entries);
  if (!end.ok()) return wire::ToGrpcStatus(end.status());
  resp->set_durable_end(*end);
  return grpc::Status::OK;
}

grpc::Status LogStoreService::Fence(grpc::ServerContext*, const kingfisher::v1::FenceRequest* req,
                                    kingfisher::v1::FenceResponse* resp) {
  auto r = store_->Fence(req->log(), req->segment(), req->epoch());
  if (!r.ok()) return wire::ToGrpcStatus(r.status());
  resp->set_durable_end(r->durable_end);
  resp->set_durable_bytes(r->durable_bytes);
  return grpc::Status::OK;
}

grpc::Status LogStoreService::ReadEntries(grpc::ServerContext*,
                                          const kingfisher::v1::ReadEntriesRequest* req,
                                          kingfisher::v1::ReadEntriesResponse* resp) {
  auto r = store_->Read(req->log(), req->segment(), req->from_entry(), req->to_entry(),
                        req->max_bytes());
  if (!r.ok()) return wire::ToGrpcStatus(r.status());
  resp->set_first_entry(req->from_entry());
  resp->set_durable_end(r->durable_end);
  for (auto& e : r->entries) resp->add_entries(std::move(e));
  return grpc::Status::OK;
}

grpc::Status LogStoreService::Seal(grpc::ServerContext*, const kingfisher::v1::SealRequest* req,
                                   kingfisher::v1::SealResponse*) {
  return wire::ToGrpcStatus(store_->Seal(req->log(), req->segment(), req->epoch(), req->end()));
}

grpc::Status LogStoreService::DeleteSegment(grpc::ServerContext*,
                                            const kingfisher::v1::DeleteSegmentRequest* req,
                                            kingfisher::v1::DeleteSegmentResponse*) {
  return wire::ToGrpcStatus(store_->Delete(req->log(), req->segment()));
}

}  // namespace kf::logstore
