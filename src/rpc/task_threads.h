// TaskThreads: a fixed set of named threads, each running the tasks posted to it in order.
//
// Tailing consume streams run here (ConsumeStream): the write-ahead buffer wakes a stream by
// posting its pump, so one append wakes one thread per shard instead of one thread per consumer
// (on a VM a wake-up costs 10-30 µs of CPU). A stream always posts to the same shard, so its
// pumps never run concurrently.
//
// Thread-safety: thread-safe. Ownership: owns its threads; the destructor runs what was posted
// before it, then joins. Posting during or after destruction is a bug.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/synchronization/mutex.h"

namespace kf::rpc {

class TaskThreads {
 public:
  using Task = absl::AnyInvocable<void() &&>;

  // `threads` >= 1, each named `name` (at most 15 characters, the kernel's limit).
  TaskThreads(int threads, const std::string& name);
  ~TaskThreads();
  TaskThreads(const TaskThreads&) = delete;
  TaskThreads& operator=(const TaskThreads&) = delete;

  // Spreads users over the threads (round robin).
  size_t PickShard() { return next_.fetch_add(1, std::memory_order_relaxed) % shards_.size(); }
  // Runs `task` on thread `shard` after the tasks posted there before it.
  void Post(size_t shard, Task task);

 private:
  struct Shard {
    absl::Mutex mu;
    std::deque<Task> tasks ABSL_GUARDED_BY(mu);
    bool stopping ABSL_GUARDED_BY(mu) = false;
    std::thread thread;
    bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return stopping || !tasks.empty(); }
  };
  static void Run(Shard* shard);

  std::vector<std::unique_ptr<Shard>> shards_;
  std::atomic<size_t> next_{0};
};

}  // namespace kf::rpc
