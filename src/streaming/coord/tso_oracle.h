// TimestampOracle: the cluster's timestamp oracle (docs/cluster.md, coordinator 2) — hybrid
// timestamps (ComposeTimeTick(physical ms, logical)) that are strictly increasing for the life
// of the cluster, across coordinator restarts and changes of leader.
//
// The persisted high-water mark is the metadata-store key `kf/<cluster>/tso` (decimal, an
// exclusive bound: nothing at or above it was handed out). Before handing out anything at or
// above the mark the oracle raises it by a window (default 3 s of physical time) with ONE
// compare-and-swap on the key's mod_revision; below the mark it serves from memory without a
// store call. An activated oracle starts above the mark it read, so whatever an earlier
// coordinator handed out (all below its last successful mark) is never repeated.
//
// Why a CAS: a deposed coordinator may still believe it leads. Each oracle hands out only
// ranges [old mark, new mark) whose raise it won, so two oracles never share a timestamp; the
// loser's CAS fails, and from then on it refuses (FAILED_PRECONDITION) until re-activated. A
// raise whose outcome is unknown (UNAVAILABLE, DEADLINE_EXCEEDED: the write may have happened)
// hands out nothing; the next raise first re-reads the key and, if it moved, the oracle
// counts as deposed too (it cannot tell its own write from another's). The owner (the
// Coordinator) re-activates it after confirming it still leads: the re-read mark is then safe
// to continue above.
//
// Lifecycle: constructed inactive (UNAVAILABLE "not active"); Activate reads the mark and starts
// serving; Deactivate stops serving. Open = construct + Activate, for users without an election
// (tests, a single-process deployment).
//
// Thread-safety: thread-safe. Allocations below the mark take one short lock; raises are
// serialised and do one store call (bounded by Options::call_timeout) on the caller's thread.
// An allocation that passed its check just before Deactivate may still complete: it is below a
// mark this oracle persisted, so a successor (which starts above that mark) cannot repeat it.
// Ownership: borrows the store, which must outlive the oracle.
// Errors (nothing is handed out on any error):
//   INVALID_ARGUMENT     count 0 or above kMaxBatch, at_least beyond the representable range
//   UNAVAILABLE          not active, or the store failed or timed out while raising the mark
//   FAILED_PRECONDITION  deposed: the mark moved under this oracle (another coordinator)
//   DEADLINE_EXCEEDED    (AllocateBatch) its deadline passed before a raise could start
//   DATA_LOSS            (Activate) the stored mark is not a decimal number
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/hybrid_time.h"
#include "storage/meta/meta_store.h"
#include "storage/tso/timestamp_source.h"

namespace kf::streaming {

class TimestampOracle final : public TimestampSource {
 public:
  // Largest count of one allocation: one millisecond of logical ticks, so a single request can
  // move the clock by at most a millisecond.
  static constexpr uint32_t kMaxBatch = uint32_t{1} << kLogicalBits;

  struct Options {
    uint64_t window_ms = 3000;         // how far above what is handed out a raise puts the mark
    std::function<uint64_t()> now_ms;  // wall clock in ms; empty = the system clock
    absl::Duration call_timeout = absl::Seconds(5);  // per store call
    // Called (no oracle lock held, on the allocating thread) when the oracle finds itself
    // deposed, so its owner can re-check leadership at once.
    std::function<void()> on_deposed;
  };

  // Inactive until Activate. `key` is the mark's key (ClusterKeys::tso()).
  TimestampOracle(meta::MetaStore* store, std::string key, Options options);
  // Constructs and activates (fails as Activate).
  static absl::StatusOr<std::unique_ptr<TimestampOracle>> Open(meta::MetaStore* store,
                                                               std::string key, Options options,
                                                               absl::Time deadline);
  TimestampOracle(const TimestampOracle&) = delete;
  TimestampOracle& operator=(const TimestampOracle&) = delete;

  // Reads the mark and serves strictly above it (and above everything this object handed out
  // before). Waits for a raise in flight. Errors: the store's (UNAVAILABLE, DEADLINE_EXCEEDED),
  // DATA_LOSS for a corrupt mark; the oracle then stays inactive.
  absl::Status Activate(absl::Time deadline);
  // Stops serving: every later call fails with `why` (should be UNAVAILABLE or
  // FAILED_PRECONDITION) until the next Activate.
  void Deactivate(absl::Status why);
  // OK while serving, otherwise the error allocations return.
  absl::Status state() const;

  // `count` consecutive timestamps, all above `at_least`, above every one this oracle (or any
  // earlier holder of the mark) handed out, and not below the wall clock; returns the first.
  // A raise's store calls end by `deadline` (or the call timeout, whichever comes first);
  // DEADLINE_EXCEEDED when it passed before a raise could start.
  absl::StatusOr<TimeTick> AllocateBatch(uint32_t count, TimeTick at_least,
                                         absl::Time deadline = absl::InfiniteFuture());

  // As AllocateBatch, without a store call: std::nullopt (nothing handed out) when the range
  // is not below the mark, so that only AllocateBatch, which raises it, can serve it. For a
  // caller that must not wait (a CompletionLoop).
  absl::StatusOr<std::optional<TimeTick>> TryAllocateBatch(uint32_t count, TimeTick at_least);

  // TimestampSource.
  absl::StatusOr<TimeTick> Allocate(uint32_t count = 1) override;
  // Every later allocation exceeds `t`; raises the mark first if `t` is at or above it (so the
  // promise survives a restart).
  absl::Status Observe(TimeTick t) override;

  // The mark as last read or written (exclusive bound; for tests and logs).
  uint64_t mark() const;

 private:
  // Makes the mark exceed `last` (the highest timestamp about to be handed out), raising it by
  // a CAS when needed, with store calls that end by `limit` or the call timeout. OK also when
  // the oracle was re-activated or deactivated meanwhile (the caller re-checks).
  absl::Status RaiseMarkAbove(uint64_t last, absl::Time limit);
  // INVALID_ARGUMENT for a count or an at_least AllocateBatch does not take.
  static absl::Status CheckBatch(uint32_t count, TimeTick at_least);
  // Hands out `count` timestamps above `at_least` and `now` if they all lie below the mark;
  // std::nullopt otherwise. Either way `*last` is the range's highest timestamp.
  absl::StatusOr<std::optional<TimeTick>> ClaimBelowMark(uint32_t count, TimeTick at_least,
                                                         uint64_t now, uint64_t* last)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Marks this oracle deposed if `generation` is still current; returns the refusal.
  absl::Status Depose(uint64_t generation, const std::string& why);
  uint64_t NowTick() const;

  meta::MetaStore* const store_;
  const std::string key_;
  const Options options_;

  absl::Mutex raise_mu_;  // serialises raising (store calls); taken before mu_
  mutable absl::Mutex mu_;
  absl::Status refusal_ ABSL_GUARDED_BY(mu_);  // OK while serving
  // Bumped by Activate/Deactivate/Depose: a raise started under another generation must not
  // install its result.
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t last_ ABSL_GUARDED_BY(mu_) = 0;         // last timestamp handed out (or the floor)
  uint64_t mark_ ABSL_GUARDED_BY(mu_) = 0;         // persisted exclusive bound
  int64_t mod_revision_ ABSL_GUARDED_BY(mu_) = 0;  // of the key holding mark_ (0 = absent)
  bool unsure_ ABSL_GUARDED_BY(mu_) = false;       // the last raise's outcome is unknown
};

}  // namespace kf::streaming
