// IdempotencyTable: exactly-once appends under client retries (docs/semantics.md §3).
//
// A client stamps every message with `_ik` = "<producer-id>:<sequence>" and resends the same
// key after an ambiguous failure. The table remembers, per producer, the outcome of its most
// recent sequences: a duplicate of a completed append gets the original result; a duplicate
// of an append still in flight waits for it. The state is rebuilt from the log tail when a
// WAL opens (Recover), so it survives restarts and pchannel migrations.
//
// Memory is bounded: `window` results per producer (plus those in flight) and `max_producers`
// producers (least recently used evicted). A retry of a sequence that fell out of the window cannot
// be told apart from a new message and is refused with FAILED_PRECONDITION rather than risk a
// duplicate.
//
// Thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "wal/sequence_window.h"

namespace kf::wal {

struct IdempotencyKey {
  std::string producer;
  uint64_t sequence = 0;
};

// Parses "<producer-id>:<sequence>" (producer non-empty, sequence canonical decimal).
absl::StatusOr<IdempotencyKey> ParseIdempotencyKey(std::string_view text);

template <typename Result>
class IdempotencyTable {
 public:
  using Waiter = absl::AnyInvocable<void(absl::StatusOr<Result>) &&>;

  IdempotencyTable(size_t window, size_t max_producers)
      : window_(window), max_producers_(max_producers) {}

  enum class Outcome { kNew, kDuplicate };

  // One key of BeginAll.
  struct Begun {
    const IdempotencyKey* key;
    Waiter* waiter;
    Outcome outcome = Outcome::kNew;  // out
  };
  // One key of FinishAll, with its append's result.
  struct Finished {
    const IdempotencyKey* key;
    const absl::StatusOr<Result>* result;
  };

  // Registers an append of `key`. kNew: the caller appends and later calls Complete or Fail.
  // kDuplicate: `waiter` has been (or will be, when the original finishes) called with the
  // original result; the caller must not append. `waiter` is consumed only for kDuplicate.
  Outcome Begin(const IdempotencyKey& key, Waiter& waiter) {
    Begun one{&key, &waiter};
    BeginAll(std::span<Begun>(&one, 1));
    return one.outcome;
  }

  // Begin for several keys under one lock (an appender and the completions contend for it).
  void BeginAll(std::span<Begun> all) {
    // Answers built only for duplicates: a Status with a message allocates, and kNew is the
    // hot path.
    std::vector<std::pair<Waiter*, absl::StatusOr<Result>>> answers;
    {
      absl::MutexLock lock(&mu_);
      for (Begun& b : all) b.outcome = BeginLocked(*b.key, *b.waiter, &answers);
    }
    for (auto& [waiter, answer] : answers) {
      Waiter& w = *waiter;
      std::move(w)(std::move(answer));
    }
  }

  // The append of `key` is durable with `result`: remember it and answer waiting duplicates.
  void Complete(const IdempotencyKey& key, const Result& result) {
    const absl::StatusOr<Result> r = result;
    Finished one{&key, &r};
    FinishAll(std::span<const Finished>(&one, 1));
  }

  // The append of `key` failed: waiting duplicates get `status`; a later retry appends anew.
  void Fail(const IdempotencyKey& key, const absl::Status& status) {
    const absl::StatusOr<Result> r = status;
    Finished one{&key, &r};
    FinishAll(std::span<const Finished>(&one, 1));
  }

  // Complete (an OK result) or Fail (an error) for several keys under one lock.
  void FinishAll(std::span<const Finished> all) {
    std::vector<std::pair<std::vector<Waiter>, const absl::StatusOr<Result>*>> answers;
    {
      absl::MutexLock lock(&mu_);
      for (const Finished& f : all) {
        std::vector<Waiter> waiters = FinishLocked(*f.key, *f.result);
        if (!waiters.empty()) answers.emplace_back(std::move(waiters), f.result);
      }
    }
    for (auto& [waiters, result] : answers) {
      for (auto& w : waiters) std::move(w)(*result);
    }
  }

  // Records a result found in the log while recovering.
  void Recover(const IdempotencyKey& key, const Result& result) {
    absl::MutexLock lock(&mu_);
    Producer& p = Touch(key.producer);
    Slot* s = p.window.Find(key.sequence);
    if (s == nullptr) s = &p.window.Add(key.sequence);
    s->state = Window::State::kDone;
    s->result = result;
    Trim(p);
  }

  // The remembered result of `key` if its append completed (tests and diagnostics; touches no
  // producer's recency).
  std::optional<Result> Completed(const IdempotencyKey& key) const {
    absl::MutexLock lock(&mu_);
    auto it = producers_.find(key.producer);
    if (it == producers_.end()) return std::nullopt;
    const Slot* s = it->second.window.Find(key.sequence);
    if (s == nullptr || s->state != Window::State::kDone) return std::nullopt;
    return s->result;
  }

  size_t producer_count() const {
    absl::MutexLock lock(&mu_);
    return producers_.size();
  }

 private:
  using Window = SequenceWindow<Result>;
  using Slot = typename Window::Slot;
  struct Producer {
    Window window;
    size_t in_flight = 0;  // slots of `window` in flight: such a producer is never evicted
    // Duplicates waiting for an in-flight original (rare: kept out of the window's slots).
    absl::flat_hash_map<uint64_t, std::vector<Waiter>> waiters;
    std::list<std::string>::iterator lru;
  };

  Producer& Touch(const std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = producers_.find(name);
    if (it != producers_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second;
    }
    while (producers_.size() >= max_producers_ && !lru_.empty()) {
      // Never evict a producer with appends in flight: their waiters would be lost.
      auto victim = std::prev(lru_.end());
      auto vit = producers_.find(*victim);
      if (vit->second.in_flight > 0) break;
      producers_.erase(vit);
      lru_.erase(victim);
    }
    lru_.push_front(name);
    Producer& p = producers_[name];
    p.lru = lru_.begin();
    return p;
  }

  void Trim(Producer& p) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    while (p.window.live() > window_ && p.window.front().state == Window::State::kDone) {
      p.window.PopFront();
    }
  }

  Outcome BeginLocked(const IdempotencyKey& key, Waiter& waiter,
                      std::vector<std::pair<Waiter*, absl::StatusOr<Result>>>* answers)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Producer& p = Touch(key.producer);
    Slot* s = p.window.Find(key.sequence);
    if (s == nullptr) {
      if (p.window.live() > 0 && p.window.live() >= window_ &&
          key.sequence < p.window.front().sequence) {
        answers->emplace_back(
            &waiter, absl::FailedPreconditionError(
                         "idempotency key " + key.producer + ":" + std::to_string(key.sequence) +
                         " is older than the deduplication window; refusing a possible duplicate"));
        return Outcome::kDuplicate;
      }
      // Not trimmed here: the oldest entry is usually still in flight (the completion trims
      // once it is done).
      p.window.Add(key.sequence);
      ++p.in_flight;
      return Outcome::kNew;
    }
    if (s->state == Window::State::kDone) {
      answers->emplace_back(&waiter, s->result);
    } else {
      p.waiters[key.sequence].push_back(std::move(waiter));
    }
    return Outcome::kDuplicate;
  }

  // Settles `key` with `result` (kept when OK); returns the duplicates waiting for it.
  std::vector<Waiter> FinishLocked(const IdempotencyKey& key, const absl::StatusOr<Result>& result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::vector<Waiter> waiters;
    auto pit = producers_.find(key.producer);
    if (pit == producers_.end()) return waiters;
    Producer& p = pit->second;
    Slot* s = p.window.Find(key.sequence);
    if (s == nullptr || s->state != Window::State::kInFlight) return waiters;
    --p.in_flight;
    if (!p.waiters.empty()) {
      if (auto w = p.waiters.find(key.sequence); w != p.waiters.end()) {
        waiters = std::move(w->second);
        p.waiters.erase(w);
      }
    }
    if (result.ok()) {
      s->state = Window::State::kDone;
      s->result = *result;
      Trim(p);
    } else {
      p.window.Remove(s);
    }
    return waiters;
  }

  const size_t window_;
  const size_t max_producers_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Producer> producers_ ABSL_GUARDED_BY(mu_);
  std::list<std::string> lru_ ABSL_GUARDED_BY(mu_);  // most recently used first
};

}  // namespace kf::wal
