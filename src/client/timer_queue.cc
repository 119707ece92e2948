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
  // Sleeps until the earliest task. Adding a later task or cancelling the earliest does not
  // wake this thread (it wakes at the old time, finds nothing due and sleeps again): with one
  // append in flight at a time every append schedules and cancels an attempt timeout, and
  // waking for both would cost this thread two context switches per append.
  auto due_earlier = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopped_ || (!tasks_.empty() && tasks_.begin()->first.first < wake_at_);
  };
  mu_.Lock();
  while (!stopped_) {
    auto it = tasks_.begin();
    wake_at_ = it == tasks_.end() ? absl::InfiniteFuture() : it->first.first;
    if (absl::Now() < wake_at_) {
      mu_.AwaitWithDeadline(absl::Condition(&due_earlier), wake_at_);
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
