#include "rpc/completion_loop.h"

#include <pthread.h>

#include <utility>

namespace kf::rpc {

CompletionLoop::CompletionLoop(std::unique_ptr<grpc::ServerCompletionQueue> cq)
    : cq_(std::move(cq)) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "kf-rpc");
    void* tag = nullptr;
    bool ok = false;
    while (cq_->Next(&tag, &ok)) static_cast<Tag*>(tag)->Proceed(ok);
  });
}

CompletionLoop::~CompletionLoop() { ShutdownAndJoin(); }

void CompletionLoop::ShutdownAndJoin() {
  if (shut_down_) return;
  shut_down_ = true;
  cq_->Shutdown();
  thread_.join();
}

}  // namespace kf::rpc
