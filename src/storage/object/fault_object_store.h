// FaultObjectStore: wraps another ObjectStore and injects the failures object storage has —
// errors, timeouts, slow PUTs, and a PUT that was applied but whose answer was lost — so the
// layers above can be tested against them. With no fault armed it is a transparent proxy
// (the contract tests run through it).
//
// Thread-safety: thread-safe; faults are consumed by whichever calls come first.
// Ownership: borrows `base`, which must outlive the wrapper.
// Errors: those of `base`, plus the injected ones.
#pragma once

#include <array>
#include <cstdint>
#include <deque>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/object/object_store.h"

namespace kf::object {

class FaultObjectStore final : public ObjectStore {
 public:
  enum class Op { kPut, kGet, kHead, kList, kDelete };
  static constexpr size_t kOpCount = 5;

  explicit FaultObjectStore(ObjectStore* base) : base_(base) {}

  // The next `count` calls of `op` fail with `status` without reaching the base.
  void FailNext(Op op, absl::Status status, int count = 1);
  // The next `count` calls of `op` hang until their deadline, then DEADLINE_EXCEEDED, without
  // reaching the base (a request the server never answered).
  void TimeoutNext(Op op, int count = 1);
  // The next Put reaches the base (and succeeds or fails there), then the caller gets
  // `status` instead of the answer: a Put that may have been applied.
  void LoseNextPutAnswer(absl::Status status = absl::UnavailableError("injected: answer lost"));
  // Every later Put waits `delay` before reaching the base; when that passes its deadline it
  // returns DEADLINE_EXCEEDED without being applied. Zero turns it off.
  void SetPutDelay(absl::Duration delay);
  // Every later Put is applied at once, then its answer waits `delay` (a stored object whose
  // success the caller learns late). Zero turns it off.
  void SetPutAnswerDelay(absl::Duration delay);

  // Calls of `op` seen so far, including failed ones.
  uint64_t calls(Op op) const;

  absl::StatusOr<std::string> Put(std::string_view key, std::string_view data,
                                  const PutOptions& options, absl::Time deadline) override;
  absl::StatusOr<std::string> Get(std::string_view key, const ByteRange& range,
                                  absl::Time deadline) override;
  absl::StatusOr<ObjectInfo> Head(std::string_view key, absl::Time deadline) override;
  absl::StatusOr<ListResult> List(std::string_view prefix, std::string_view start_after,
                                  size_t limit, absl::Time deadline) override;
  absl::Status Delete(std::string_view key, absl::Time deadline) override;

 private:
  enum class Kind { kFail, kTimeout, kLoseAnswer };
  struct Fault {
    Kind kind;
    absl::Status status;
  };
  // Counts the call and pops the fault armed for `op`, if any.
  bool Take(Op op, Fault* fault);
  // Applies a fail/timeout fault: the status the call returns.
  static absl::Status Inject(const Fault& fault, absl::Time deadline);

  ObjectStore* const base_;
  mutable absl::Mutex mu_;
  std::array<std::deque<Fault>, kOpCount> faults_ ABSL_GUARDED_BY(mu_);
  std::array<uint64_t, kOpCount> calls_ ABSL_GUARDED_BY(mu_) = {};
  absl::Duration put_delay_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
  absl::Duration answer_delay_ ABSL_GUARDED_BY(mu_) = absl::ZeroDuration();
};

}  // namespace kf::object
