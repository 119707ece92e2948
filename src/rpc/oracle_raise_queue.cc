#include "rpc/oracle_raise_queue.h"

#include <utility>

#include "common/errors.h"
#include "streaming/coord/tso_oracle.h"

namespace kf::rpc {

OracleRaiseQueue::OracleRaiseQueue(streaming::TimestampOracle* oracle)
    : oracle_(oracle), thread_([this] { Run(); }) {}

OracleRaiseQueue::~OracleRaiseQueue() { Close(); }

void OracleRaiseQueue::Add(uint32_t count, TimeTick at_least, absl::Time deadline, Done done) {
  {
    absl::MutexLock l(&mu_);
    if (!closed_) {
      pending_.push_back({count, at_least, deadline, std::move(done)});
      return;
    }
  }
  std::move(done)(StreamingError(StreamingCode::kOnShutdown, "server is shutting down"));
}

void OracleRaiseQueue::Close() {
  std::deque<Pending> refused;
  {
    absl::MutexLock l(&mu_);
    if (closed_) return;
    closed_ = true;
    refused.swap(pending_);
  }
  for (Pending& p : refused) {
    std::move(p.done)(StreamingError(StreamingCode::kOnShutdown, "server is shutting down"));
  }
  thread_.join();
}

void OracleRaiseQueue::Run() {
  for (;;) {
    Pending p;
    {
      absl::MutexLock l(&mu_);
      auto ready = [this]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return closed_ || !pending_.empty(); };
      mu_.Await(absl::Condition(&ready));
      if (pending_.empty()) return;  // closed
      p = std::move(pending_.front());
      pending_.pop_front();
    }
    if (absl::Now() >= p.deadline) {
      std::move(p.done)(absl::DeadlineExceededError("deadline passed while queued for a raise"));
      continue;
    }
    std::move(p.done)(oracle_->AllocateBatch(p.count, p.at_least, p.deadline));
  }
}

}  // namespace kf::rpc
