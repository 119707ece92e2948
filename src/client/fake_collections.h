// FakeCollections: in-process fakes of the Collections service and of
// StreamingCoord.AllocateTimestamps for the client library's and kfctl's tests. Serve them
// with FakeStreamingNode(listen, fake.services()) so that one endpoint also takes Produce.
//
// The catalog is a map by name: CreateCollection gives ids 1, 2, ... and vchannels
// "kf-dml_<shard % 4>_<id>v<shard>" (CREATED, with the `_default` partition); errors carry
// their streaming code in the details like the real server's. Every call is recorded with the
// deadline the server saw. Calls can be failed or held on cue.
//
// Thread-safety: thread-safe (one mutex). Ownership: owns the two services; they must outlive
// the server that serves them. Test-only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/server_context.h"
#include "kingfisher/v1/collections.grpc.pb.h"
#include "kingfisher/v1/streaming.grpc.pb.h"

namespace kf::client::testing {

class FakeCollections {
 public:
  // One call as the server received it.
  struct Call {
    std::string method;  // "CreateCollection", ..., "AllocateTimestamps"
    std::string database;
    std::string name;                                // the collection's, if any
    std::string partition;                           // partition calls
    kingfisher::v1::DdlOptions options;              // DDL calls
    kingfisher::v1::CreateCollectionRequest create;  // CreateCollection
    uint32_t count = 0;                              // AllocateTimestamps
    absl::Time deadline;                             // the call's, as the server saw it
  };

  FakeCollections();
  ~FakeCollections();  // releases held calls

  // The Collections and StreamingCoord services, to register on a server.
  std::vector<grpc::Service*> services();

  // Later calls of `method` ("" = any) answer `status` (a StreamingError, or a plain status):
  // the next `times` of them, or every one when 0; OK stops that.
  void FailWith(absl::Status status, std::string method = "", int times = 0);
  // Later calls wait (without answering) until Release() or until their deadline passes.
  void Hold();
  void Release();
  // AllocateTimestamps answers `count` timestamps whatever was asked (0 = what was asked).
  void AnswerTimestampCount(uint32_t count);
  // The first timestamp of the next AllocateTimestamps.
  void SetNextTimestamp(uint64_t first);

  std::vector<Call> calls() const;
  // The catalog as the server would list it.
  std::vector<kingfisher::v1::CollectionInfo> collections() const;

 private:
  class CollectionsService;
  class CoordService;

  // Records the call, waits while held; returns the injected failure or OK.
  grpc::Status Begin(grpc::ServerContext* ctx, Call call) ABSL_LOCKS_EXCLUDED(mu_);

  grpc::Status Create(const kingfisher::v1::CreateCollectionRequest& req,
                      kingfisher::v1::CollectionInfo* out);
  grpc::Status Drop(const std::string& name);
  grpc::Status Describe(const std::string& name, kingfisher::v1::CollectionInfo* out) const;
  grpc::Status Partition(const kingfisher::v1::PartitionRequest& req, bool create);
  grpc::Status Allocate(uint32_t count, kingfisher::v1::AllocateTimestampsResponse* out);

  std::unique_ptr<CollectionsService> collections_service_;
  std::unique_ptr<CoordService> coord_service_;

  mutable absl::Mutex mu_;
  absl::Status fail_ ABSL_GUARDED_BY(mu_);
  std::string fail_method_ ABSL_GUARDED_BY(mu_);
  int fail_times_ ABSL_GUARDED_BY(mu_) = 0;  // calls left to fail; 0: all
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t timestamp_count_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_timestamp_ ABSL_GUARDED_BY(mu_) = uint64_t{1} << 50;
  int64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, kingfisher::v1::CollectionInfo> catalog_ ABSL_GUARDED_BY(mu_);
  std::vector<Call> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::client::testing
