// Shared pieces of the benchmark binaries: the raw-disk baselines every bench prints next to
// its own figures (docs/quality-bars.md compares against them, measured in the same run on the same
// filesystem), percentiles and error exits.
//
// Thread-safety: functions only; each call uses its own file. Ownership: none kept.
// Errors: Die() exits the process (benchmarks have no error path worth recovering).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace kf::bench {

using Clock = std::chrono::steady_clock;

inline double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
// Clock's now in nanoseconds: a send time that travels in a payload.
inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

// Prints "<prog>: <what>" to stderr and exits with status 1.
[[noreturn]] void Die(const std::string& what);
// The program name Die() prefixes (default "bench"). Also turns off absl's per-lock deadlock
// detection, as the server does: every bench calls it first.
void SetProgramName(std::string name);

// A fresh directory `<dir>/<prefix>_XXXXXX` (creating `dir`) for one run's data.
std::string MakeRunDir(const std::string& dir, const std::string& prefix);

// Where a bench that starts the server keeps things: the parent of its run dirs and the
// directory of the `kingfisher` binary.
struct BenchDirs {
  std::string dir;
  std::string bin_dir;
};
// The defaults for the binary `argv0`: <build>/bench-data and the binary's own directory.
BenchDirs DefaultDirs(const char* argv0);
// What every server-driving bench does first: names the program for Die, makes stdout line
// buffered (results interleave with the progress on stderr), points ServerProcess at
// `dirs.bin_dir` (KF_BIN_DIR) and returns a fresh run dir under `dirs.dir`.
std::string StartRun(const std::string& program, const BenchDirs& dirs);

// Creates (or truncates) `path` for writing and, with `preallocate` > 0, fallocates it that far
// and syncs, as the local WAL does its segments (an fdatasync then commits no size change).
int OpenPreallocated(const std::string& path, uint64_t preallocate);

// Raw loop on `path` (created, truncated, removed afterwards): a `size`-byte write +
// fdatasync, until `seconds` pass or `max_ops` ops ran. Returns per-op latencies in seconds.
// With `preallocate` > 0 the file is first fallocate'd that far, as the local WAL does its
// segments (the fdatasyncs then commit no file-size change). `cpu_per_op`, when given, gets
// the CPU seconds the loop's thread used per op (the floor of a server's CPU per sync).
std::vector<double> RawWriteSync(const std::string& path, size_t size, double seconds,
                                 size_t max_ops = SIZE_MAX, uint64_t preallocate = 0,
                                 double* cpu_per_op = nullptr);

// The disk alone under an open loop: an ideal group-committing log receiving `rate` messages
// of `size` bytes per second for `seconds`. Each round writes every message due by then with
// one write + fdatasync; a message's latency runs from its due time to the end of the
// fdatasync that covered it, so a stalled fdatasync delays the messages queued behind it as it
// would a WAL's. Returns per-message latencies in seconds.
std::vector<double> PacedGroupCommit(const std::string& path, size_t size, double rate,
                                     double seconds);

// Blocks while *word == expected (or until a wake or a signal): FUTEX_WAIT_PRIVATE.
void FutexWait(std::atomic<int>* word, int expected);
// Wakes one thread blocked in FutexWait on `word`.
void FutexWake(std::atomic<int>* word);

// Raw loop of `rounds` round trips between two threads that take turns by waiting on a flag
// under an absl::Mutex (Await): each round trip is two wake-ups of a sleeping thread. Returns
// per-round-trip latencies in seconds. The baseline for latencies made of thread hand-offs (a
// message crosses several threads between its append and its delivery).
// `cpu_per_wake`, when given, gets the CPU seconds both threads used per wake-up.
std::vector<double> WakeRoundTrips(size_t rounds, double* cpu_per_wake = nullptr);

// One ack an appender thread blocks on: a bare futex, so that setting it costs one futex call
// (none when the waiter has not slept yet) and waiting at most one per wake-up. Not
// std::promise (its set_value makes two more futex calls: glibc's call_once wakes
// unconditionally) and not absl::Notification (a mutex and a condition around the same call):
// on a VM a futex call costs microseconds, which the 64-appender figure would charge to the WAL.
template <typename T>
class Ack {
 public:
  void Set(T value) {
    value_ = std::move(value);
    // After the exchange the waiter may return and destroy *this: the wake only uses the
    // address, and a stray wake of a later futex at it is spurious, which futex waiters allow.
    if (state_.exchange(kDone, std::memory_order_acq_rel) == kSleeping) FutexWake(&state_);
  }
  T Wait() {
    int state = kPending;
    if (state_.compare_exchange_strong(state, kSleeping, std::memory_order_acquire)) {
      do {
        FutexWait(&state_, kSleeping);
      } while (state_.load(std::memory_order_acquire) != kDone);
    }
    return std::move(value_);
  }

 private:
  enum : int { kPending, kDone, kSleeping };
  T value_{};
  std::atomic<int> state_{kPending};
};

// A window of at most `size` operations in flight, for a thread that issues asynchronous
// operations and callbacks that complete them. The issuer blocks only when the window is full
// and then until it has drained to 3/4, so it is woken once per quarter window rather than once
// per completion (a wake-up costs this VM tens of microseconds, which the figure would charge to
// the code under test), and completions touch only an atomic except at that mark.
// Thread-safety: one issuer (Acquire, WaitEmpty), any number of completing threads (Release).
class InFlightWindow {
 public:
  explicit InFlightWindow(int size) : size_(size), refill_at_(size - size / 4) {}
  void Acquire() {
    if (in_flight_.load(std::memory_order_acquire) >= size_) {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &InFlightWindow::Refilled));
    }
    in_flight_.fetch_add(1, std::memory_order_acq_rel);
  }
  void Release() {
    const int left = in_flight_.fetch_sub(1, std::memory_order_acq_rel) - 1;
    if (left == refill_at_ || left == 0) {
      absl::MutexLock lock(&mu_);  // its release re-checks a waiter's condition
    }
  }
  void WaitEmpty() {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &InFlightWindow::Empty));
  }

 private:
  bool Refilled() const { return in_flight_.load(std::memory_order_acquire) <= refill_at_; }
  bool Empty() const { return in_flight_.load(std::memory_order_acquire) == 0; }

  const int size_, refill_at_;
  std::atomic<int> in_flight_{0};
  absl::Mutex mu_;
};

// Sum of `v` divided by its count (0 for empty).
double Mean(const std::vector<double>& v);
// The p-quantile (0 <= p <= 1) by nearest rank on a sorted copy; 0 for empty.
double Percentile(std::vector<double> v, double p);

// Nearest-rank quantiles of one sample set, sorted once.
struct Quantiles {
  size_t count = 0;
  double p50 = 0, p90 = 0, p99 = 0, max = 0;
};
Quantiles Summarize(std::vector<double> v);

}  // namespace kf::bench
