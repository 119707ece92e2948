// TaskThreads: a fixed set of named threads, each running the tasks posted to it in order.
//
// Tailing consume streams run here (ConsumeStream): the write-ahead buffer wakes a stream by
// posting its pump, so one append wakes one thread per shard instead of one thread per consumer
// (on a VM a wake-up costs 10-30 µs of CPU). A stream always posts to the same shard, so its
// pumps never run concurrently; the streams of one connection share a shard (ShardFor).
//
// Thread-safety: thread-safe. Ownership: owns its threads; the destructor runs what was posted
// before it, then joins. Posting during or after destruction is a bug.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
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

  // The shard of the users that share `key`, which then share a thread: the consume streams of
  // one client connection, whose writes would otherwise meet on the connection's lock from
  // several threads (gRPC then hands the later ones to its executor thread, one more wake-up
  // each) instead of leaving back to back from one; a connection sends one write at a time
  // anyway, and a message's encoding is shared, so one thread loses little. Different keys
  // spread by hash.
  size_t ShardFor(std::string_view key) const {
    return std::hash<std::string_view>{}(key) % shards_.size();
  }
  // Runs `task` on thread `shard` after the tasks posted there before it.
  void Post(size_t shard, Task task);
  // True while thread `shard` waits with nothing to run (a Post would wake it).
  bool Idle(size_t shard) const;

 private:
  struct Shard {
    mutable absl::Mutex mu;
    std::deque<Task> tasks ABSL_GUARDED_BY(mu);
    bool stopping ABSL_GUARDED_BY(mu) = false;
    bool running ABSL_GUARDED_BY(mu) = false;  // the thread is running tasks
    std::thread thread;
    bool HasWork() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) { return stopping || !tasks.empty(); }
  };
  static void Run(Shard* shard);

  std::vector<std::unique_ptr<Shard>> shards_;
};

}  // namespace kf::rpc
