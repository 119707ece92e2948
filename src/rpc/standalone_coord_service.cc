#include "rpc/standalone_coord_service.h"

#include <utility>

namespace kf::rpc {

StandaloneCoordService::StandaloneCoordService(const WalRegistry* registry, int64_t node_id,
                                               std::string address)
    : registry_(registry), node_id_(node_id), address_(std::move(address)) {}

void StandaloneCoordService::set_address(std::string address) {
  absl::MutexLock lock(&mu_);
  address_ = std::move(address);
}

grpc::ServerUnaryReactor* StandaloneCoordService::GetStatus(
    grpc::CallbackServerContext* context, const kingfisher::v1::GetStatusRequest* /*request*/,
    kingfisher::v1::GetStatusResponse* response) {
  auto* node = response->add_nodes();
  node->set_id(node_id_);
  {
    absl::MutexLock lock(&mu_);
    node->set_address(address_);
  }
  node->set_state("ONLINE");
  for (const auto& info : registry_->List()) {
    auto* p = response->add_pchannels();
    p->set_pchannel(info.pchannel);
    p->set_node(node_id_);
    p->set_term(info.term.value());
    p->set_state("ASSIGNED");
    p->set_readers(info.readers);
  }
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace kf::rpc
