#include "rpc/call_workers.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"

namespace kf::rpc {

CallWorkers::~CallWorkers() {
  Close();
  WaitIdle(absl::InfiniteFuture());
  absl::MutexLock l(&mu_);
  Reap();
}

CallWorkers::Spawn CallWorkers::TrySpawn(absl::AnyInvocable<Reply() &&> work) {
  absl::MutexLock l(&mu_);
  Reap();
  if (closed_) return Spawn::kClosed;
  if (working_ >= max_) return Spawn::kFull;
  ++working_;
  const uint64_t id = next_id_++;
  threads_.emplace(id, std::thread([this, id, work = std::move(work)]() mutable {
                     {
                       Reply reply = [&] {
                         auto w = std::move(work);
                         return std::move(w)();
                       }();
                       {
                         absl::MutexLock l(&mu_);
                         --working_;
                       }
                       std::move(reply)();
                     }
                     absl::MutexLock l(&mu_);
                     finished_.push_back(id);
                   }));
  return Spawn::kStarted;
}

void CallWorkers::Reap() {
  for (uint64_t id : finished_) {
    auto it = threads_.find(id);
    it->second.join();  // it is past its last use of mu_
    threads_.erase(it);
  }
  finished_.clear();
}

void CallWorkers::Close() {
  absl::MutexLock l(&mu_);
  closed_ = true;
}

bool CallWorkers::WaitIdle(absl::Time deadline) {
  absl::MutexLock l(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return threads_.size() == finished_.size();
  };
  return mu_.AwaitWithDeadline(absl::Condition(&idle), deadline);
}

absl::Status CallWorkers::Refusal(Spawn spawned, std::string_view what) const {
  if (spawned == Spawn::kClosed) {
    return StreamingError(StreamingCode::kOnShutdown, "server is shutting down");
  }
  return StreamingError(
      StreamingCode::kRateLimited,
      absl::StrCat("too many ", ToAbsl(what), " in progress (", max_, "); retry later"));
}

}  // namespace kf::rpc
