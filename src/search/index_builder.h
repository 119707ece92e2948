// IndexBuilder: builds the approximate index (ivf_index.h) of each chunk a growing segment
// filled, on one background thread, oldest first, and publishes it into the chunk; a search
// uses a chunk's index from then on and scans it exactly before. A chunk whose segment is
// gone by the time its turn comes is skipped.
//
// The thread runs faiss with one OpenMP thread, so indexing takes at most one core from the
// searches and the WAL.
//
// Thread-safety: thread-safe. Errors: a failed build is logged; the chunk stays exact.
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "search/ivf_index.h"
#include "search/metric.h"

namespace kf::search {

class Chunk;

class IndexBuilder {
 public:
  explicit IndexBuilder(IndexOptions options);
  ~IndexBuilder();  // stops after the build in progress; the queue is dropped
  IndexBuilder(const IndexBuilder&) = delete;
  IndexBuilder& operator=(const IndexBuilder&) = delete;

  const IndexOptions& options() const { return options_; }

  // Queues `chunk` (full: every row written) for indexing with `metric`.
  void Enqueue(std::shared_ptr<Chunk> chunk, Metric metric);
  // Returns once every chunk queued before the call is indexed or skipped (tests, benches).
  void AwaitIdle();
  size_t built() const;
  // Chunks queued or being built.
  size_t pending() const;

 private:
  struct Task {
    std::weak_ptr<Chunk> chunk;
    Metric metric;
  };
  void Run();

  const IndexOptions options_;
  mutable absl::Mutex mu_;
  std::deque<Task> queue_ ABSL_GUARDED_BY(mu_);
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  size_t built_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace kf::search
