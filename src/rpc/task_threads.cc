#include "rpc/task_threads.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

namespace kf::rpc {

TaskThreads::TaskThreads(int threads, const std::string& name) {
  for (int i = 0; i < std::max(threads, 1); ++i) {
    auto shard = std::make_unique<Shard>();
    shard->thread = std::thread([s = shard.get(), name] {
      pthread_setname_np(pthread_self(), name.c_str());  // attributes CPU in top and perf
      Run(s);
    });
    shards_.push_back(std::move(shard));
  }
}

TaskThreads::~TaskThreads() {
  for (auto& s : shards_) {
    absl::MutexLock lock(&s->mu);
    s->stopping = true;
  }
  for (auto& s : shards_) s->thread.join();
}

void TaskThreads::Post(size_t shard, Task task) {
  Shard& s = *shards_[shard % shards_.size()];
  absl::MutexLock lock(&s.mu);
  s.tasks.push_back(std::move(task));
}

bool TaskThreads::Idle(size_t shard) const {
  const Shard& s = *shards_[shard % shards_.size()];
  absl::MutexLock lock(&s.mu);
  return !s.running && s.tasks.empty();
}

void TaskThreads::Run(Shard* s) {
  std::deque<Task> batch;
  for (;;) {
    {
      absl::MutexLock lock(&s->mu);
      s->running = false;
      s->mu.Await(absl::Condition(s, &Shard::HasWork));
      if (s->tasks.empty()) return;  // stopping, and everything posted before ran
      s->running = true;
      batch.swap(s->tasks);
    }
    for (Task& task : batch) std::move(task)();
    batch.clear();  // destroys what the tasks captured on this thread
  }
}

}  // namespace kf::rpc
