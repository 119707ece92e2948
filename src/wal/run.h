// Run and RunRef: appends that pass the WAL's sequencer together and are finished together. A
// Wal::AppendBatch's ordinary messages form one run (no txn, no DDL, no TimeTick: nothing that
// changes what the next message's admission or LCMID depends on); any other append is a run of
// one. The run owns its AppendContexts (one allocation for a run of one, two for a longer one).
//
// Ownership: a run lives while a RunRef to it does. The appending thread holds one while it
// sequences the run, each enqueued entry's backend callback one, and whoever holds an append
// back (HoldRun: the txn's commit gate) one; when the last goes, the run's completion
// (Completion::Complete) finishes every entry it has not answered yet, and the run is freed.
//
// Thread-safety: taking and releasing references is thread-safe (an atomic count); a RunRef
// itself is used by one thread at a time; the contexts follow AppendContext's rules.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>

#include "absl/container/fixed_array.h"
#include "wal/append_context.h"

namespace kf::wal {

class Completion;
class RunRef;

class Run {
 public:
  // A run of `size` default-constructed contexts, finished by `completion`.
  static RunRef Create(Completion* completion, size_t size);

  Run(const Run&) = delete;
  Run& operator=(const Run&) = delete;

  size_t size() const { return entries_.size(); }
  AppendContext& operator[](size_t i) { return entries_[i]; }
  std::span<AppendContext> entries() { return {entries_.data(), entries_.size()}; }
  Completion& completion() const { return *completion_; }
  // The appending thread may write and complete the run itself (WalBackend::
  // EndAppendsWritingHere): its caller holds no lock that the callbacks take and waits for its
  // answers (Wal::AppendBatch with WalOptions::batch_appenders_write).
  bool may_write_here() const { return may_write_here_; }
  void set_may_write_here() { may_write_here_ = true; }

 private:
  friend class RunRef;
  Run(Completion* completion, size_t size);
  ~Run() = default;

  // Lets go of `n` references; the last finishes and frees the run.
  void Release(uint32_t n);

  std::atomic<uint32_t> refs_{1};
  Completion* const completion_;
  bool may_write_here_ = false;
  absl::FixedArray<AppendContext, 1> entries_;
};

// A counted reference to a Run. Move-only: each extra reference is taken explicitly (Share,
// Reserve/Adopt), where the code says why.
class RunRef {
 public:
  RunRef() = default;
  RunRef(RunRef&& other) noexcept : run_(std::exchange(other.run_, nullptr)) {}
  RunRef& operator=(RunRef&& other) noexcept {
    if (this != &other) {
      Reset();
      run_ = std::exchange(other.run_, nullptr);
    }
    return *this;
  }
  RunRef(const RunRef&) = delete;
  RunRef& operator=(const RunRef&) = delete;
  ~RunRef() { Reset(); }

  // Another reference to `run`, counted now.
  static RunRef Share(Run& run) {
    run.refs_.fetch_add(1, std::memory_order_relaxed);
    return RunRef(&run);
  }

  // For a sequencer about to enqueue up to `n` entries: Reserve takes n references with one
  // atomic add, Adopt hands one of them out, Unreserve gives back those not handed out.
  static void Reserve(Run& run, uint32_t n) { run.refs_.fetch_add(n, std::memory_order_relaxed); }
  static RunRef Adopt(Run& run) { return RunRef(&run); }
  static void Unreserve(Run& run, uint32_t n) {
    if (n > 0) run.Release(n);
  }

  void Reset() {
    if (run_ != nullptr) std::exchange(run_, nullptr)->Release(1);
  }

  Run* get() const { return run_; }
  Run& operator*() const { return *run_; }
  Run* operator->() const { return run_; }

 private:
  friend class Run;
  explicit RunRef(Run* run) : run_(run) {}  // adopts a reference already counted

  Run* run_ = nullptr;
};

// A reference to the run `append` lives in: the append is not answered before it is released
// (with append.hold_status set, if the holder failed it).
inline RunRef HoldRun(const AppendContext& append) { return RunRef::Share(*append.run); }

}  // namespace kf::wal
