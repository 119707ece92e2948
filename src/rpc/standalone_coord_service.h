// StandaloneCoordService: StreamingCoord.GetStatus for the standalone server, where one node
// (id 1) owns every pchannel: nodes = [{1, address, "ONLINE"}], pchannels = every registered
// pchannel with node 1, its term and "ASSIGNED".
//
// Thread-safety: thread-safe. Ownership: borrows the registry. Errors: none.
#pragma once

#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "kingfisher/v1/streaming.grpc.pb.h"
#include "rpc/wal_registry.h"

namespace kf::rpc {

class StandaloneCoordService final : public kingfisher::v1::StreamingCoord::CallbackService {
 public:
  StandaloneCoordService(const WalRegistry* registry, int64_t node_id, std::string address);

  grpc::ServerUnaryReactor* GetStatus(grpc::CallbackServerContext* context,
                                      const kingfisher::v1::GetStatusRequest* request,
                                      kingfisher::v1::GetStatusResponse* response) override;

  // The node address reported (once the server knows its bound port).
  void set_address(std::string address);

 private:
  const WalRegistry* const registry_;
  const int64_t node_id_;
  absl::Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kf::rpc
