// CollectionsRpc: DDL over the raw generated kingfisher.v1.Collections stub, for the tests that
// check the wire service of a standalone server or a coordinator without the client library in
// between. Each call has a 30 s deadline and returns the server's status through
// kf::wire::FromGrpcStatus, so its streaming code (GetStreamingCode) is there to check.
//
// Thread-safety: as the stub: calls may run concurrently. Ownership: owns its channel and stub.
// Errors: each call returns the call's status (UNAVAILABLE / kTransport while nothing serves).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kingfisher/v1/collections.grpc.pb.h"

namespace kf::testing {

class CollectionsRpc {
 public:
  // Over an insecure channel to `address` ("host:port").
  explicit CollectionsRpc(const std::string& address);

  absl::StatusOr<kingfisher::v1::CollectionInfo> Create(const std::string& name, uint32_t dim,
                                                        kingfisher::v1::MetricType metric,
                                                        uint32_t shards);
  absl::StatusOr<kingfisher::v1::CollectionInfo> Describe(const std::string& name);
  absl::Status Drop(const std::string& name);
  absl::StatusOr<std::vector<kingfisher::v1::CollectionInfo>> List();

 private:
  std::unique_ptr<kingfisher::v1::Collections::Stub> stub_;
};

}  // namespace kf::testing
