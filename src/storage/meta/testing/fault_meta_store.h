// FaultMetaStore: a MetaStore wrapper for tests that fails calls on demand.
//
//   - SetDown(true): every call fails with UNAVAILABLE without reaching the base store (the
//     store is unreachable); existing watches keep running on the base.
//   - FailNextTxns(n, status, applied): the next n Txn calls fail with `status`; with
//     `applied` the txn is first run on the base (the write happened, the answer was lost: the
//     ambiguous case every caller of a mutation must handle).
//   - CrashAtTxn(n, applied): the n-th Txn from now fails with UNAVAILABLE (run on the base
//     first with `applied`) and the store is down from then on, as if the caller's process
//     died at that write; WaitCrashed tells when it happened.
//   - HoldTxnsOn(key): Txn calls with an op on `key` wait, before anything else, until
//     ReleaseHeld (a store call in flight for as long as a test needs) or their deadline
//     (then DEADLINE_EXCEEDED, as a store that does not answer); WaitHeld tells when one
//     waits.
//
// Thread-safety: thread-safe. Ownership: borrows the base store, which must outlive it.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "storage/meta/meta_store.h"

namespace kf::meta::testing {

class FaultMetaStore final : public MetaStore {
 public:
  explicit FaultMetaStore(MetaStore* base) : base_(base) {}

  void SetDown(bool down) {
    absl::MutexLock l(&mu_);
    down_ = down;
  }
  void FailNextTxns(int n, absl::Status status, bool applied) {
    absl::MutexLock l(&mu_);
    txn_failures_ = n;
    txn_status_ = std::move(status);
    txn_applied_ = applied;
  }
  void CrashAtTxn(int n, bool applied) {
    absl::MutexLock l(&mu_);
    crash_in_ = n;
    crash_applied_ = applied;
    crashed_ = false;
  }
  bool WaitCrashed(absl::Time deadline) const {
    absl::MutexLock l(&mu_);
    return mu_.AwaitWithDeadline(absl::Condition(&crashed_), deadline);
  }
  void HoldTxnsOn(std::string key) {
    absl::MutexLock l(&mu_);
    hold_key_ = std::move(key);
    released_ = false;
  }
  bool WaitHeld(absl::Time deadline) const {
    absl::MutexLock l(&mu_);
    auto waiting = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return held_ > 0; };
    return mu_.AwaitWithDeadline(absl::Condition(&waiting), deadline);
  }
  void ReleaseHeld() {
    absl::MutexLock l(&mu_);
    released_ = true;
  }
  int txn_calls() const {
    absl::MutexLock l(&mu_);
    return txn_calls_;
  }

  absl::StatusOr<GetResult> Get(std::string_view key, absl::Time deadline) override {
    if (absl::Status s = Down(); !s.ok()) return s;
    return base_->Get(key, deadline);
  }
  absl::StatusOr<RangeResult> Range(std::string_view prefix, absl::Time deadline,
                                    int64_t limit = 0) override {
    if (absl::Status s = Down(); !s.ok()) return s;
    return base_->Range(prefix, deadline, limit);
  }
  absl::StatusOr<int64_t> Put(std::string_view key, std::string_view value, absl::Time deadline,
                              LeaseId lease = kNoLease) override {
    if (absl::Status s = Down(); !s.ok()) return s;
    return base_->Put(key, value, deadline, lease);
  }
  absl::StatusOr<DeleteResult> Delete(std::string_view key, absl::Time deadline) override {
    if (absl::Status s = Down(); !s.ok()) return s;
    return base_->Delete(key, deadline);
  }
  absl::StatusOr<DeleteResult> DeletePrefix(std::string_view prefix, absl::Time deadline) override {
    if (absl::Status s = Down(); !s.ok()) return s;
    return base_->DeletePrefix(prefix, deadline);
  }
  absl::StatusOr<TxnResult> Txn(const std::vector<Compare>& compares,
                                const std::vector<Op>& then_ops, const std::vector<Op>& else_ops,
                                absl::Time deadline) override {
    if (!Hold(then_ops, else_ops, deadline)) {
      return absl::DeadlineExceededError("fault injection: held past the deadline");
    }
    if (absl::Status s = Down(); !s.ok()) return s;
    absl::Status fail;
    bool applied = false;
    {
      absl::MutexLock l(&mu_);
      ++txn_calls_;
      if (crash_in_ > 0 && --crash_in_ == 0) {
        down_ = true;
        crashed_ = true;
        fail = absl::UnavailableError("fault injection: crashed at this write");
        applied = crash_applied_;
      } else if (txn_failures_ > 0) {
        --txn_failures_;
        fail = txn_status_;
        applied = txn_applied_;
      }
    }
    if (fail.ok()) return base_->Txn(compares, then_ops, else_ops, deadline);
    if (applied) base_->Txn(compares, then_ops, else_ops, deadline).IgnoreError();
    return fail;
  }
  absl::StatusOr<LeaseGrant> GrantLease(absl::Duration ttl, absl::Time deadline) override {
    if (absl::Status s = Down(); !s.ok()) return s;
    return base_->GrantLease(ttl, deadline);
  }
  absl::StatusOr<absl::Duration> KeepAliveOnce(LeaseId lease, absl::Time deadline) override {
    if (absl::Status s = Down(); !s.ok()) return s;
    return base_->KeepAliveOnce(lease, deadline);
  }
  absl::Status RevokeLease(LeaseId lease, absl::Time deadline) override {
    if (absl::Status s = Down(); !s.ok()) return s;
    return base_->RevokeLease(lease, deadline);
  }
  absl::StatusOr<std::unique_ptr<WatchHandle>> Watch(std::string_view prefix,
                                                     int64_t start_revision, WatchCallback callback,
                                                     absl::Time deadline) override {
    if (absl::Status s = Down(); !s.ok()) return s;
    return base_->Watch(prefix, start_revision, std::move(callback), deadline);
  }
  absl::Status Compact(int64_t revision, absl::Time deadline) override {
    if (absl::Status s = Down(); !s.ok()) return s;
    return base_->Compact(revision, deadline);
  }

 private:
  absl::Status Down() const {
    absl::MutexLock l(&mu_);
    return down_ ? absl::UnavailableError("fault injection: store down") : absl::OkStatus();
  }

  // False: held until the deadline passed.
  bool Hold(const std::vector<Op>& then_ops, const std::vector<Op>& else_ops, absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock l(&mu_);
    if (hold_key_.empty()) return true;
    const std::string_view key = hold_key_;
    auto on_key = [key](const Op& op) { return op.key == key; };
    if (std::none_of(then_ops.begin(), then_ops.end(), on_key) &&
        std::none_of(else_ops.begin(), else_ops.end(), on_key)) {
      return true;
    }
    ++held_;
    const bool released = mu_.AwaitWithDeadline(absl::Condition(&released_), deadline);
    --held_;
    return released;
  }

  MetaStore* const base_;
  mutable absl::Mutex mu_;
  std::string hold_key_ ABSL_GUARDED_BY(mu_);
  bool released_ ABSL_GUARDED_BY(mu_) = false;
  int held_ ABSL_GUARDED_BY(mu_) = 0;
  bool down_ ABSL_GUARDED_BY(mu_) = false;
  int txn_failures_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status txn_status_ ABSL_GUARDED_BY(mu_);
  bool txn_applied_ ABSL_GUARDED_BY(mu_) = false;
  int txn_calls_ ABSL_GUARDED_BY(mu_) = 0;
  int crash_in_ ABSL_GUARDED_BY(mu_) = 0;
  bool crash_applied_ ABSL_GUARDED_BY(mu_) = false;
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace kf::meta::testing
