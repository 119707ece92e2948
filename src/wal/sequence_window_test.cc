#include "wal/sequence_window.h"

#include "gtest/gtest.h"

namespace kf::wal {
namespace {

using Window = SequenceWindow<int>;

TEST(SequenceWindow, FindsDenseSparseAndOutOfOrderSequences) {
  Window w;
  for (uint64_t s : {10, 11, 12, 20, 30, 15}) w.Add(s).result = static_cast<int>(s);
  EXPECT_EQ(w.live(), 6u);
  for (uint64_t s : {10, 11, 12, 15, 20, 30}) {
    ASSERT_NE(w.Find(s), nullptr) << s;
    EXPECT_EQ(w.Find(s)->result, static_cast<int>(s));
  }
  for (uint64_t s : {0, 9, 13, 14, 16, 31}) EXPECT_EQ(w.Find(s), nullptr) << s;
  EXPECT_EQ(w.front().sequence, 10u);
}

TEST(SequenceWindow, RemovedSlotIsGoneAndItsSequenceCanComeBack) {
  Window w;
  for (uint64_t s = 1; s <= 5; ++s) w.Add(s);
  w.Remove(w.Find(3));
  EXPECT_EQ(w.Find(3), nullptr);
  EXPECT_EQ(w.live(), 4u);
  EXPECT_EQ(w.Find(4)->sequence, 4u);  // the vacancy does not hide its neighbours
  Window::Slot& again = w.Add(3);
  EXPECT_EQ(again.state, Window::State::kInFlight);
  EXPECT_EQ(w.Find(3), &again);
  EXPECT_EQ(w.live(), 5u);
  w.Remove(w.Find(1));  // the front: the next live slot becomes the front
  EXPECT_EQ(w.front().sequence, 2u);
}

TEST(SequenceWindow, EmptiesWhenEverythingIsRemovedOrPopped) {
  Window w;
  for (uint64_t s = 1; s <= 3; ++s) w.Add(s);
  w.Remove(w.Find(2));
  w.Remove(w.Find(3));  // the back, and the vacancy before it
  EXPECT_EQ(w.held(), 1u);
  w.PopFront();
  EXPECT_EQ(w.held(), 0u);
  EXPECT_EQ(w.live(), 0u);
  EXPECT_EQ(w.Find(1), nullptr);
  w.Add(7);  // older or newer than anything before: the window starts afresh
  EXPECT_EQ(w.front().sequence, 7u);
}

TEST(SequenceWindow, SlidingForLongKeepsEveryLiveSlotFindable) {
  Window w;
  constexpr uint64_t kKept = 100;
  for (uint64_t s = 0; s < 10000; ++s) {
    w.Add(s).result = static_cast<int>(s);
    if (w.live() > kKept) w.PopFront();
    if (s % 997 == 0) {
      for (uint64_t q = s + 1 - std::min<uint64_t>(s + 1, kKept); q <= s; ++q) {
        ASSERT_NE(w.Find(q), nullptr) << q << " at " << s;
        ASSERT_EQ(w.Find(q)->result, static_cast<int>(q));
      }
    }
  }
  EXPECT_EQ(w.live(), kKept);
  EXPECT_EQ(w.held(), kKept);
  EXPECT_EQ(w.front().sequence, 10000 - kKept);
}

}  // namespace
}  // namespace kf::wal
