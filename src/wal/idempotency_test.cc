#include "wal/idempotency.h"

#include <optional>

#include "gtest/gtest.h"

namespace kf::wal {
namespace {

using Table = IdempotencyTable<int>;

TEST(ParseIdempotencyKey, AcceptsCanonicalAndRejectsGarbage) {
  auto k = ParseIdempotencyKey("p-1:a:17");  // the producer id may contain ':'
  ASSERT_TRUE(k.ok());
  EXPECT_EQ(k->producer, "p-1:a");
  EXPECT_EQ(k->sequence, 17u);
  for (const char* bad : {"", "p", ":1", "p:", "p:01", "p:-1", "p:1x", "p:99999999999999999999"}) {
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

}  // namespace
}  // namespace kf::wal
