#include "wal/backends/local/zero_ahead.h"

#include <pthread.h>

#include <algorithm>

namespace kf::wal::local {

ZeroAhead::ZeroAhead(uint64_t ahead, uint64_t limit) : ahead_(ahead), limit_(limit) {
  thread_ = std::jthread([this] {
    pthread_setname_np(pthread_self(), "kf-wal-zero");
    Loop();
  });
}

ZeroAhead::~ZeroAhead() {
  {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }
  thread_.join();
}

void ZeroAhead::BeforeWrite(const std::shared_ptr<fs::WritableFile>& file, uint64_t end,
                            uint64_t group_bytes) {
  absl::MutexLock l(&mu_);
  if (file != file_) {
    AwaitIdle();
    file_ = file;
    zeroed_ = 0;
    failed_ = false;
  }
  // The chunk in flight starts on a page past the previous end: it overlaps this write only
  // when the write reaches that page.
  const auto clear = [this, end]()
                         ABSL_NO_THREAD_SAFETY_ANALYSIS { return !busy_ || end <= chunk_start_; };
  mu_.Await(absl::Condition(&clear));
  end_ = end;
  // Smoothed: one small group among large ones (a lull) is no reason to start.
  group_bytes_ =
      group_bytes_ == 0 ? group_bytes : group_bytes_ - group_bytes_ / 8 + group_bytes / 8;
  wanted_ = group_bytes_ < kSmallGroupBytes;
}

void ZeroAhead::Detach() {
  absl::MutexLock l(&mu_);
  AwaitIdle();
  file_.reset();
}

void ZeroAhead::AwaitIdle() {
  mu_.Await(absl::Condition(
      +[](bool* busy) { return !*busy; }, &busy_));
}

uint64_t ZeroAhead::zeroed_bytes() const {
  absl::MutexLock l(&mu_);
  return zeroed_bytes_;
}

uint64_t ZeroAhead::NextStart() const {
  const uint64_t from = std::max(zeroed_, end_);
  return (from + kPageBytes - 1) / kPageBytes * kPageBytes;
}

bool ZeroAhead::HasWork() const {
  if (file_ == nullptr || failed_ || !wanted_) return false;
  return NextStart() < std::min(end_ + ahead_, limit_);
}

void ZeroAhead::Loop() {
  absl::MutexLock l(&mu_);
  for (;;) {
    mu_.Await(absl::Condition(
        +[](ZeroAhead* z) ABSL_NO_THREAD_SAFETY_ANALYSIS { return z->stop_ || z->HasWork(); },
        this));
    if (stop_) return;
    const std::shared_ptr<fs::WritableFile> file = file_;
    const uint64_t start = NextStart();
    const uint64_t len = std::min(kChunkBytes, limit_ - start);
    busy_ = true;
    chunk_start_ = start;
    mu_.Unlock();
    const absl::Status s = file->ZeroFill(start, len);
    mu_.Lock();
    busy_ = false;  // file_ is still `file`: the writer waits for busy_ to change it
    // A failure (UNIMPLEMENTED, a full disk) only costs this file the faster fdatasyncs; the
    // writer meets any real disk error itself.
    if (s.ok()) {
      zeroed_ = start + len;
      zeroed_bytes_ += len;
    } else {
      failed_ = true;
    }
  }
}

}  // namespace kf::wal::local
