// SequenceWindow: one producer's recent sequence numbers and their outcomes, for the
// idempotency table (idempotency.h).
//
// The slots sit in one buffer in ascending sequence order. A producer sends (almost)
// increasing sequences, so an append lands at the back, a completion finds its slot at its
// offset from the oldest one (no hash, no search), and trimming pops the front. A hash map of
// ~150-byte entries plus a separate ordered index cost a cache miss per lookup and were most of
// the deduplication's cost at 300k appends/s.
//
// A removed slot (a failed append) stays as a vacant placeholder until it reaches either end,
// so that a failure costs no shifting of the slots after it.
//
// Thread-safety: none (the table locks around it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kf::wal {

template <typename Result>
class SequenceWindow {
 public:
  enum class State : uint8_t { kInFlight, kDone, kVacant };
  struct Slot {
    uint64_t sequence = 0;
    State state = State::kInFlight;
    Result result{};  // meaningful once kDone
  };

  // Slots that are not vacant.
  size_t live() const { return live_; }
  // Slots held, vacant ones included: what the window's memory grows with.
  size_t held() const { return slots_.size() - head_; }
  // The oldest live slot. REQUIRES: live() > 0.
  const Slot& front() const { return slots_[head_]; }

  // The live slot of `sequence`, or null.
  Slot* Find(uint64_t sequence) {
    Slot* s = Locate(sequence);
    return s != nullptr && s->state != State::kVacant ? s : nullptr;
  }
  const Slot* Find(uint64_t sequence) const {
    return const_cast<SequenceWindow*>(this)->Find(sequence);  // Find changes nothing
  }

  // A new in-flight slot for `sequence`. REQUIRES: Find(sequence) == nullptr.
  Slot& Add(uint64_t sequence) {
    ++live_;
    if (Slot* vacant = Locate(sequence)) {
      vacant->state = State::kInFlight;
      return *vacant;
    }
    if (head_ == slots_.size() || slots_.back().sequence < sequence) {
      return slots_.emplace_back(Slot{sequence, State::kInFlight, {}});
    }
    return *slots_.insert(LowerBound(sequence), Slot{sequence, State::kInFlight, {}});
  }

  // Removes a live slot.
  void Remove(Slot* s) {
    s->state = State::kVacant;
    --live_;
    while (head_ < slots_.size() && slots_.back().state == State::kVacant) slots_.pop_back();
    SkipVacantFront();
  }

  // Removes the oldest live slot. REQUIRES: live() > 0.
  void PopFront() {
    --live_;
    ++head_;
    SkipVacantFront();
  }

 private:
  Slot* Locate(uint64_t sequence) {
    if (head_ == slots_.size()) return nullptr;
    const uint64_t first = slots_[head_].sequence;
    if (sequence < first || sequence > slots_.back().sequence) return nullptr;
    // Dense sequences (a producer writing to one pchannel): the slot is at its offset.
    const uint64_t offset = sequence - first;
    if (offset < slots_.size() - head_ && slots_[head_ + offset].sequence == sequence) {
      return &slots_[head_ + offset];
    }
    auto it = LowerBound(sequence);
    return it != slots_.end() && it->sequence == sequence ? &*it : nullptr;
  }

  typename std::vector<Slot>::iterator LowerBound(uint64_t sequence) {
    return std::lower_bound(slots_.begin() + static_cast<std::ptrdiff_t>(head_), slots_.end(),
                            sequence, [](const Slot& s, uint64_t q) { return s.sequence < q; });
  }

  // Keeps the front live, and drops the popped prefix once it is most of the buffer (each slot
  // is then moved at most once per pop, amortized).
  void SkipVacantFront() {
    while (head_ < slots_.size() && slots_[head_].state == State::kVacant) ++head_;
    if (head_ == slots_.size()) {
      slots_.clear();
      head_ = 0;
    } else if (head_ >= 64 && head_ * 2 >= slots_.size()) {
      slots_.erase(slots_.begin(), slots_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

  std::vector<Slot> slots_;  // ascending sequences; [0, head_) popped, front live if any
  size_t head_ = 0;
  size_t live_ = 0;
};

}  // namespace kf::wal
