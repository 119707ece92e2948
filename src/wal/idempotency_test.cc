#include "wal/idempotency.h"

#include <map>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace kf::wal {
namespace {

using Table = IdempotencyTable<int>;

TEST(ParseIdempotencyKey, AcceptsCanonicalAndRejectsGarbage) {
  auto k = ParseIdempotencyKey("p-1:a:17");  // the producer id may contain ':'
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->producer, "p-1:a");
  EXPECT_EQ(k->sequence, 17u);
  auto max = ParseIdempotencyKey("p:18446744073709551615");
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(max->sequence, UINT64_MAX);
  for (const char* bad : {"", "p", ":1", "p:", "p:01", "p:-1", "p:1x", "p:18446744073709551616",
                          "p:99999999999999999999"}) {
    EXPECT_EQ(ParseIdempotencyKey(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(IdempotencyTable, DuplicateOfCompletedGetsOriginalResult) {
  Table t(8, 8);
  std::optional<absl::StatusOr<int>> got;
  Table::Waiter w = [&](absl::StatusOr<int> r) { got = r; };
  ASSERT_EQ(t.Begin({"p", 1}, w), Table::Outcome::kNew);
  EXPECT_FALSE(got.has_value());
  t.Complete({"p", 1}, 42);
  Table::Waiter w2 = [&](absl::StatusOr<int> r) { got = r; };
  ASSERT_EQ(t.Begin({"p", 1}, w2), Table::Outcome::kDuplicate);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(**got, 42);
}

TEST(IdempotencyTable, DuplicateOfInFlightWaitsForIt) {
  Table t(8, 8);
  Table::Waiter first = [](absl::StatusOr<int>) {};
  ASSERT_EQ(t.Begin({"p", 5}, first), Table::Outcome::kNew);
  std::optional<absl::StatusOr<int>> got;
  Table::Waiter dup = [&](absl::StatusOr<int> r) { got = r; };
  ASSERT_EQ(t.Begin({"p", 5}, dup), Table::Outcome::kDuplicate);
  EXPECT_FALSE(got.has_value());
  t.Complete({"p", 5}, 7);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(**got, 7);
}

TEST(IdempotencyTable, FailureLetsTheRetryAppendAgain) {
  Table t(8, 8);
  Table::Waiter w = [](absl::StatusOr<int>) {};
  ASSERT_EQ(t.Begin({"p", 1}, w), Table::Outcome::kNew);
  std::optional<absl::StatusOr<int>> got;
  Table::Waiter dup = [&](absl::StatusOr<int> r) { got = r; };
  ASSERT_EQ(t.Begin({"p", 1}, dup), Table::Outcome::kDuplicate);
  t.Fail({"p", 1}, absl::UnavailableError("boom"));
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->status().code(), absl::StatusCode::kUnavailable);
  Table::Waiter again = [](absl::StatusOr<int>) {};
  EXPECT_EQ(t.Begin({"p", 1}, again), Table::Outcome::kNew);
}

TEST(IdempotencyTable, RetryOlderThanWindowIsRefusedNotDuplicated) {
  Table t(/*window=*/4, 8);
  for (uint64_t s = 1; s <= 10; ++s) {
    Table::Waiter w = [](absl::StatusOr<int>) {};
    ASSERT_EQ(t.Begin({"p", s}, w), Table::Outcome::kNew);
    t.Complete({"p", s}, static_cast<int>(s));
  }
  std::optional<absl::StatusOr<int>> got;
  Table::Waiter w = [&](absl::StatusOr<int> r) { got = r; };
  EXPECT_EQ(t.Begin({"p", 2}, w), Table::Outcome::kDuplicate);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->status().code(), absl::StatusCode::kFailedPrecondition);
  Table::Waiter recent = [&](absl::StatusOr<int> r) { got = r; };
  EXPECT_EQ(t.Begin({"p", 9}, recent), Table::Outcome::kDuplicate);
  EXPECT_EQ(**got, 9);
}

TEST(IdempotencyTable, RecoveredStateAnswersDuplicates) {
  Table t(8, 8);
  t.Recover({"p", 3}, 33);
  std::optional<absl::StatusOr<int>> got;
  Table::Waiter w = [&](absl::StatusOr<int> r) { got = r; };
  EXPECT_EQ(t.Begin({"p", 3}, w), Table::Outcome::kDuplicate);
  EXPECT_EQ(**got, 33);
}

TEST(IdempotencyTable, ProducersAreBoundedByLru) {
  Table t(8, /*max_producers=*/2);
  for (const char* p : {"a", "b", "c"}) {
    Table::Waiter w = [](absl::StatusOr<int>) {};
    ASSERT_EQ(t.Begin({p, 1}, w), Table::Outcome::kNew);
    t.Complete({p, 1}, 1);
  }
  EXPECT_EQ(t.producer_count(), 2u);
}

// The window semantics, written as plainly as possible: an ordered map per producer whose
// smallest completed sequences are evicted beyond `window`. The table must agree with it on
// every outcome and every answer, whatever order the sequences arrive in.
class ReferenceWindow {
 public:
  explicit ReferenceWindow(size_t window) : window_(window) {}
  // nullopt: new; otherwise what the duplicate is answered with now (code kUnknown: later).
  std::optional<absl::StatusOr<int>> Begin(uint64_t seq) {
    auto it = entries_.find(seq);
    if (it == entries_.end()) {
      if (!entries_.empty() && seq < entries_.begin()->first && entries_.size() >= window_) {
        return absl::FailedPreconditionError("old");
      }
      entries_.emplace(seq, std::nullopt);
      Trim();
      return std::nullopt;
    }
    if (it->second) return *it->second;
    return absl::UnknownError("waits");
  }
  void Complete(uint64_t seq, int v) {
    auto it = entries_.find(seq);
    if (it == entries_.end()) return;
    it->second = v;
    Trim();
  }
  void Fail(uint64_t seq) { entries_.erase(seq); }
  bool InFlight(uint64_t seq) const {
    auto it = entries_.find(seq);
    return it != entries_.end() && !it->second;
  }

 private:
  void Trim() {
    while (entries_.size() > window_ && entries_.begin()->second) entries_.erase(entries_.begin());
  }
  const size_t window_;
  std::map<uint64_t, std::optional<int>> entries_;
};

TEST(IdempotencyTable, MatchesTheReferenceWindowUnderRandomOrder) {
  constexpr size_t kWindow = 8;
  Table t(kWindow, 8);
  ReferenceWindow ref(kWindow);
  std::mt19937_64 rng(7);
  std::map<uint64_t, std::vector<std::optional<absl::StatusOr<int>>*>> waiting;
  std::vector<std::unique_ptr<std::optional<absl::StatusOr<int>>>> answers;
  for (int step = 0; step < 20000; ++step) {
    // Mostly increasing sequences with retries and stragglers, as clients send them.
    const uint64_t seq = step / 4 + rng() % 24;
    const int op = static_cast<int>(rng() % 4);
    if (op < 2) {
      answers.push_back(std::make_unique<std::optional<absl::StatusOr<int>>>());
      auto* got = answers.back().get();
      Table::Waiter w = [got](absl::StatusOr<int> r) { *got = r; };
      auto want = ref.Begin(seq);
      auto outcome = t.Begin({"p", seq}, w);
      ASSERT_EQ(outcome == Table::Outcome::kNew, !want.has_value()) << "step " << step;
      if (!want) continue;
      if (want->status().code() == absl::StatusCode::kUnknown) {
        EXPECT_FALSE(got->has_value()) << "step " << step;
        waiting[seq].push_back(got);
      } else {
        ASSERT_TRUE(got->has_value()) << "step " << step;
        EXPECT_EQ(got->value().status().code(), want->status().code()) << "step " << step;
        if (want->ok()) {
          EXPECT_EQ(got->value().value(), want->value()) << "step " << step;
        }
      }
    } else if (ref.InFlight(seq)) {
      const int v = static_cast<int>(rng() % 1000);
      if (op == 2) {
        ref.Complete(seq, v);
        t.Complete({"p", seq}, v);
      } else {
        ref.Fail(seq);
        t.Fail({"p", seq}, absl::UnavailableError("boom"));
      }
      for (auto* got : waiting[seq]) {
        ASSERT_TRUE(got->has_value()) << "step " << step;
        if (op == 2) {
          EXPECT_EQ(got->value().value(), v) << "step " << step;
        } else {
          EXPECT_EQ(got->value().status().code(), absl::StatusCode::kUnavailable);
        }
      }
      waiting.erase(seq);
    }
  }
}

}  // namespace
}  // namespace kf::wal
