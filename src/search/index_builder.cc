#include "search/index_builder.h"

#include <omp.h>

#include <utility>

#include "search/growing_segment.h"
#include "spdlog/spdlog.h"

namespace kf::search {

IndexBuilder::IndexBuilder(IndexOptions options) : options_(options), thread_([this] { Run(); }) {}

IndexBuilder::~IndexBuilder() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    queue_.clear();
  }
  thread_.join();
}

void IndexBuilder::Enqueue(std::shared_ptr<Chunk> chunk, Metric metric) {
  absl::MutexLock lock(&mu_);
  queue_.push_back({std::move(chunk), metric});
}

void IndexBuilder::AwaitIdle() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](IndexBuilder* b) ABSL_EXCLUSIVE_LOCKS_REQUIRED(b->mu_) {
        return b->stopping_ || (b->queue_.empty() && !b->busy_);
      },
      this));
}

size_t IndexBuilder::built() const {
  absl::MutexLock lock(&mu_);
  return built_;
}

size_t IndexBuilder::pending() const {
  absl::MutexLock lock(&mu_);
  return queue_.size() + (busy_ ? 1 : 0);
}

void IndexBuilder::Run() {
  omp_set_num_threads(1);  // this thread's OpenMP regions (k-means) stay on it
  mu_.Lock();
  while (true) {
    mu_.Await(absl::Condition(
        +[](IndexBuilder* b)
             ABSL_EXCLUSIVE_LOCKS_REQUIRED(b->mu_) { return b->stopping_ || !b->queue_.empty(); },
        this));
    if (stopping_) break;
    Task task = std::move(queue_.front());
    queue_.pop_front();
    std::shared_ptr<Chunk> chunk = task.chunk.lock();
    if (chunk == nullptr) continue;  // its partition or collection was dropped
    busy_ = true;
    mu_.Unlock();
    absl::StatusOr<std::unique_ptr<IvfIndex>> index =
        IvfIndex::Build(chunk->vectors_, chunk->capacity_, chunk->dim_, task.metric, options_);
    const bool built = index.ok();
    if (built) {
      chunk->PublishIndex(*std::move(index));
    } else {
      spdlog::error("search: chunk stays exact: {}", index.status().ToString());
    }
    chunk.reset();  // the last reference when its segment is gone: freed outside the lock
    mu_.Lock();
    busy_ = false;
    built_ += built ? 1 : 0;
  }
  mu_.Unlock();
}

}  // namespace kf::search
