// LogStoreService: the kingfisher.v1.LogStore gRPC service (proto/kingfisher/v1/logstore.proto)
// over a SegmentStore. Synchronous handlers: each call does its disk work (an fdatasync for
// AddEntries) on a gRPC server thread, so a slow disk holds only that call's thread.
//
// Thread-safety: thread-safe. Ownership: borrows the store, which must outlive the service.
// Errors: the SegmentStore's, as grpc::Status with the streaming code in the details.
#pragma once

#include "kingfisher/v1/logstore.grpc.pb.h"
#include "logstore/store/segment_store.h"

namespace kf::logstore {

class LogStoreService final : public kingfisher::v1::LogStore::Service {
 public:
  explicit LogStoreService(SegmentStore* store) : store_(store) {}

  grpc::Status AddEntries(grpc::ServerContext* ctx, const kingfisher::v1::AddEntriesRequest* req,
                          kingfisher::v1::AddEntriesResponse* resp) override;
  grpc::Status Fence(grpc::ServerContext* ctx, const kingfisher::v1::FenceRequest* req,
                     kingfisher::v1::FenceResponse* resp) override;
  grpc::Status ReadEntries(grpc::ServerContext* ctx, const kingfisher::v1::ReadEntriesRequest* req,
                           kingfisher::v1::ReadEntriesResponse* resp) override;
  grpc::Status Seal(grpc::ServerContext* ctx, const kingfisher::v1::SealRequest* req,
                    kingfisher::v1::SealResponse* resp) override;
  grpc::Status DeleteSegment(grpc::ServerContext* ctx,
                             const kingfisher::v1::DeleteSegmentRequest* req,
                             kingfisher::v1::DeleteSegmentResponse* resp) override;

 private:
  SegmentStore* const store_;
};

}  // namespace kf::logstore
