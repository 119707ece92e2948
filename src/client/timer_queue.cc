#include "client/timer_queue.h"

namespace kf::client {

TimerQueue::TimerQueue() : thread_([this] { Run(); }) {}

TimerQueue::~TimerQueue() { Stop(); }

TimerQueue::TaskId TimerQueue::Schedule(absl::Time when, absl::AnyInvocable<void() &&> fn) {
  absl::MutexLock l(&mu_);
  TaskId id(when, next_seq_++);
  if (!stopped_) tasks_.emplace(id, std::move(fn));
  return id;
}

void TimerQueue::Cancel(const TaskId& id) {
  absl::MutexLock l(&mu_);
  tasks_.erase(id);
}

void TimerQueue::Stop() {
  {
    absl::MutexLock l(&mu_);
    stopped_ = true;
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock l(&mu_);
  tasks_.clear();
}

void TimerQueue::Run() {
  mu_.Lock();
  while (!stopped_) {
    if (tasks_.empty()) {
      mu_.Await(absl::Condition(
          +[](TimerQueue* q)
               ABSL_NO_THREAD_SAFETY_ANALYSIS { return q->stopped_ || !q->tasks_.empty(); },
          this));
      continue;
    }
    auto it = tasks_.begin();
    const std::pair<absl::Time, uint64_t> first = it->first;
    if (absl::Now() < first.first) {
      // Wake for Stop, for a new earlier task, or at the deadline.
      auto changed = [this, &first]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopped_ || tasks_.empty() || tasks_.begin()->first < first;
      };
      mu_.AwaitWithDeadline(absl::Condition(&changed), first.first);
      continue;
    }
    auto fn = std::move(it->second);
    tasks_.erase(it);
    mu_.Unlock();
    std::move(fn)();
    mu_.Lock();
  }
  mu_.Unlock();
}

}  // namespace kf::client
