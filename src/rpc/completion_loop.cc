#include "rpc/completion_loop.h"

#include <pthread.h>

#include <utility>
#include <vector>

#include "spdlog/spdlog.h"

namespace kf::rpc {
namespace {

// The loop thread's tasks queued by RunAfterCurrent; null on other threads.
thread_local std::vector<absl::AnyInvocable<void()&&>>* after_current = nullptr;

}  // namespace

CompletionLoop::CompletionLoop(std::unique_ptr<grpc::ServerCompletionQueue> cq)
    : cq_(std::move(cq)) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "kf-rpc");
    std::vector<absl::AnyInvocable<void() &&>> queued, running;
    after_current = &queued;
    void* tag = nullptr;
    bool ok = false;
    while (cq_->Next(&tag, &ok)) {
      static_cast<Tag*>(tag)->Proceed(ok);
      while (!queued.empty()) {  // a task may queue more
        running.swap(queued);
        for (auto& task : running) std::move(task)();
        running.clear();
      }
    }
    after_current = nullptr;
  });
}

CompletionLoop::~CompletionLoop() { ShutdownAndJoin(); }

bool CompletionLoop::RunAfterCurrent(absl::AnyInvocable<void() &&>&& task) {
  if (after_current == nullptr) return false;
  after_current->push_back(std::move(task));
  return true;
}

CompletionLoop::CallCount::CallCount(CompletionLoop* loop) : loop_(loop) {
  absl::MutexLock l(&loop_->calls_mu_);
  ++loop_->calls_;
}

CompletionLoop::CallCount::~CallCount() {
  absl::MutexLock l(&loop_->calls_mu_);
  --loop_->calls_;
}

void CompletionLoop::ShutdownAndJoin() {
  if (shut_down_) return;
  shut_down_ = true;
  {
    // Without a limit: a call's work may outlast the server's grace (a search on a worker runs
    // to its own deadline), and its answer on a queue shut down would abort the process.
    absl::MutexLock l(&calls_mu_);
    auto none_left = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(calls_mu_) { return calls_ == 0; };
    while (!calls_mu_.AwaitWithTimeout(absl::Condition(&none_left), kCallsReport)) {
      spdlog::warn("rpc: waiting for {} calls to end before closing the completion queue", calls_);
    }
  }
  cq_->Shutdown();
  thread_.join();
}

}  // namespace kf::rpc
