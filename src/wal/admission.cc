#include "wal/admission.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/errors.h"

namespace kf::wal {

absl::Status Admission::Begin(int64_t n) {
  in_flight_.fetch_add(n);
  if (!rejecting_.load()) return absl::OkStatus();
  absl::Status rejection;
  {
    absl::MutexLock lock(&mu_);
    rejection = Rejection();
  }
  End(n);
  return rejection;
}

void Admission::End(int64_t n) {
  if (n > 0 && in_flight_.fetch_sub(n) == n && rejecting_.load()) {
    // Close may be waiting for the count to drain; releasing the mutex makes it re-check.
    absl::MutexLock lock(&mu_);
  }
}

void Admission::Break(const absl::Status& sticky) {
  absl::MutexLock lock(&mu_);
  if (broken_.ok()) broken_ = sticky;
  rejecting_.store(true);
}

bool Admission::Close(absl::Status rejection) {
  absl::MutexLock lock(&mu_);
  const bool was_closed = closed_;
  if (!was_closed) closed_rejection_ = std::move(rejection);
  closed_ = true;
  rejecting_.store(true);
  return !was_closed;
}

void Admission::AwaitIdle() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](std::atomic<int64_t>* n) { return n->load() == 0; }, &in_flight_));
}

absl::Status Admission::Health() const {
  absl::MutexLock lock(&mu_);
  return broken_;
}

absl::Status Admission::Closed() const {
  absl::MutexLock lock(&mu_);
  return ClosedLocked();
}

absl::Status Admission::ClosedLocked() const {
  if (!closed_) return absl::OkStatus();
  if (!closed_rejection_.ok()) return closed_rejection_;
  return StreamingError(StreamingCode::kOnShutdown,
                        absl::StrCat("pchannel ", pchannel_, " is closing"));
}

absl::Status Admission::Rejection() const {
  if (!broken_.ok()) return broken_;
  return ClosedLocked();
}

}  // namespace kf::wal
