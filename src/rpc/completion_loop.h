// CompletionLoop: the one thread that serves every call of a process's gRPC server, on gRPC's
// async API (one completion queue). Debian's gRPC (1.51, epoll1 poller) serves its callback
// API from at least two threads that pass the poller's role to each other on every network
// event, so each event cost two thread wake-ups where one does: with one polling thread, one
// append at a time took 7 server context switches per message instead of 12 and half the
// server CPU (docs/performance.md, "One thread polls"). Any other thread that polls gRPC in
// the process (a callback service, a synchronous client call) brings the hand-off back, so
// every service of RpcServer is served here.
//
// Work on this thread must be short: handlers that may wait hand their work to a pool
// (CallWorkers), streams read storage on threads of their own.
//
// Thread-safety: Tags run on the loop thread, one at a time. Ownership: owns the queue and the
// thread. Shutdown order (gRPC's): grpc::Server::Shutdown and Wait first (every call
// cancelled), then ShutdownAndJoin, which waits for the calls' last completions.
#pragma once

#include <cstdint>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/completion_queue.h"

namespace kf::rpc {

class CompletionLoop {
 public:
  // A completion: Proceed runs on the loop thread with the operation's outcome.
  class Tag {
   public:
    virtual void Proceed(bool ok) = 0;

   protected:
    ~Tag() = default;
  };

  // Starts the thread over `cq` (from grpc::ServerBuilder::AddCompletionQueue).
  explicit CompletionLoop(std::unique_ptr<grpc::ServerCompletionQueue> cq);
  ~CompletionLoop();  // ShutdownAndJoin

  grpc::ServerCompletionQueue* cq() const { return cq_.get(); }

  // On a loop thread: queues `task` to run there once the current completion's work returned
  // (before the loop waits again) and returns true; e.g. a consumer's delivery then follows the
  // produce ack written by that work instead of waking another thread. Elsewhere: false, and
  // `task` is left as it was.
  static bool RunAfterCurrent(absl::AnyInvocable<void() &&>&& task);

  // Held by each call object served here, armed or live. A call the server's shutdown
  // cancelled still completes its operations here, and its reaction may start one more (a
  // stream's status); an operation started on a queue already shut down aborts the process
  // (gRPC asserts), so the queue is shut down only once no call is left.
  class CallCount {
   public:
    explicit CallCount(CompletionLoop* loop);
    ~CallCount();
    CallCount(const CallCount&) = delete;
    CallCount& operator=(const CallCount&) = delete;

   private:
    CompletionLoop* const loop_;
  };

  // Waits until every call is gone (the server's shutdown cancelled them; a warning every
  // kCallsReport names how many are left), shuts the queue down, runs what is left in it and
  // joins the thread. Idempotent; not on the loop thread.
  void ShutdownAndJoin();

 private:
  static constexpr absl::Duration kCallsReport = absl::Seconds(10);

  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
  std::thread thread_;
  bool shut_down_ = false;
  absl::Mutex calls_mu_;
  int64_t calls_ ABSL_GUARDED_BY(calls_mu_) = 0;
};

// A Tag that calls `(owner->*F)(ok)`: the completions of one call are members of it.
template <typename Owner, void (Owner::*F)(bool)>
class MemberTag final : public CompletionLoop::Tag {
 public:
  explicit MemberTag(Owner* owner) : owner_(owner) {}
  void Proceed(bool ok) override { (owner_->*F)(ok); }

 private:
  Owner* const owner_;
};

}  // namespace kf::rpc
