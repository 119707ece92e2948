#include "storage/object/fault_object_store.h"

#include <algorithm>

namespace kf::object {

void FaultObjectStore::FailNext(Op op, absl::Status status, int count) {
  absl::MutexLock l(&mu_);
  for (int i = 0; i < count; ++i) faults_[static_cast<size_t>(op)].push_back({Kind::kFail, status});
}

void FaultObjectStore::TimeoutNext(Op op, int count) {
  absl::MutexLock l(&mu_);
  for (int i = 0; i < count; ++i) {
    faults_[static_cast<size_t>(op)].push_back({Kind::kTimeout, absl::OkStatus()});
  }
}

void FaultObjectStore::LoseNextPutAnswer(absl::Status status) {
  absl::MutexLock l(&mu_);
  faults_[static_cast<size_t>(Op::kPut)].push_back({Kind::kLoseAnswer, std::move(status)});
}

void FaultObjectStore::SetPutDelay(absl::Duration delay) {
  absl::MutexLock l(&mu_);
  put_delay_ = delay;
}

void FaultObjectStore::SetPutAnswerDelay(absl::Duration delay) {
  absl::MutexLock l(&mu_);
  answer_delay_ = delay;
}

uint64_t FaultObjectStore::calls(Op op) const {
  absl::MutexLock l(&mu_);
  return calls_[static_cast<size_t>(op)];
}

bool FaultObjectStore::Take(Op op, Fault* fault) {
  absl::MutexLock l(&mu_);
  const size_t i = static_cast<size_t>(op);
  ++calls_[i];
  if (faults_[i].empty()) return false;
  *fault = std::move(faults_[i].front());
  faults_[i].pop_front();
  return true;
}

absl::Status FaultObjectStore::Inject(const Fault& fault, absl::Time deadline) {
  if (fault.kind == Kind::kTimeout) {
    absl::SleepFor(deadline - absl::Now());  // the unanswered request
    return absl::DeadlineExceededError("injected: no answer before the deadline");
  }
  // An OK would pose as a result (and abort a StatusOr): arming one is a test bug.
  if (fault.status.ok()) return absl::InternalError("injected an OK status as a fault");
  return fault.status;
}

absl::StatusOr<std::string> FaultObjectStore::Put(std::string_view key, std::string_view data,
                                                  const PutOptions& options, absl::Time deadline) {
  Fault fault;
  const bool armed = Take(Op::kPut, &fault);
  if (armed && fault.kind != Kind::kLoseAnswer) return Inject(fault, deadline);
  absl::Duration delay, answer_delay;
  {
    absl::MutexLock l(&mu_);
    delay = put_delay_;
    answer_delay = answer_delay_;
  }
  if (delay > absl::ZeroDuration()) {
    const absl::Duration left = deadline - absl::Now();
    absl::SleepFor(std::min(delay, left));  // the simulated slow upload
    if (delay >= left) return absl::DeadlineExceededError("injected: slow put passed the deadline");
  }
  absl::StatusOr<std::string> result = base_->Put(key, data, options, deadline);
  absl::SleepFor(answer_delay);
  if (armed) return Inject({Kind::kFail, fault.status}, deadline);  // the answer is lost
  return result;
}

absl::StatusOr<std::string> FaultObjectStore::Get(std::string_view key, const ByteRange& range,
                                                  absl::Time deadline) {
  if (Fault f; Take(Op::kGet, &f)) return Inject(f, deadline);
  return base_->Get(key, range, deadline);
}

absl::StatusOr<ObjectInfo> FaultObjectStore::Head(std::string_view key, absl::Time deadline) {
  if (Fault f; Take(Op::kHead, &f)) return Inject(f, deadline);
  return base_->Head(key, deadline);
}

absl::StatusOr<ListResult> FaultObjectStore::List(std::string_view prefix,
                                                  std::string_view start_after, size_t limit,
                                                  absl::Time deadline) {
  if (Fault f; Take(Op::kList, &f)) return Inject(f, deadline);
  return base_->List(prefix, start_after, limit, deadline);
}

absl::Status FaultObjectStore::Delete(std::string_view key, absl::Time deadline) {
  if (Fault f; Take(Op::kDelete, &f)) return Inject(f, deadline);
  return base_->Delete(key, deadline);
}

}  // namespace kf::object
