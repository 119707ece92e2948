#include "client/timer_queue.h"

#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace kf::client {
namespace {

// Bounds every wait: a task that should run but never does fails the test instead of hanging.
constexpr absl::Duration kPatience = absl::Seconds(30);

TEST(TimerQueueTest, RunsTasksInTimeOrder) {
  absl::Mutex mu;
  std::vector<int> order;
  absl::Notification done;
  // Declared after what its tasks touch, so its thread is joined before they are destroyed: the
  // last task notifies `done` while holding `mu` and may still be unlocking it when we return.
  TimerQueue q;
  const absl::Time base = absl::Now() + absl::Milliseconds(20);
  auto record = [&](int i) {
    absl::MutexLock l(&mu);
    order.push_back(i);
    if (order.size() == 3) done.Notify();
  };
  q.Schedule(base + absl::Milliseconds(20), [&] { record(3); });
  q.Schedule(base, [&] { record(1); });
  q.Schedule(base + absl::Milliseconds(10), [&] { record(2); });
  ASSERT_TRUE(done.WaitForNotificationWithTimeout(kPatience));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

// The timer thread sleeps until its earliest task; an earlier one must wake it.
TEST(TimerQueueTest, AnEarlierTaskWakesTheSleepingThread) {
  TimerQueue q;
  absl::Notification late, early;
  q.Schedule(absl::Now() + absl::Hours(1), [&] { late.Notify(); });
  q.Schedule(absl::Now(), [&] { early.Notify(); });
  EXPECT_TRUE(early.WaitForNotificationWithTimeout(kPatience));
  EXPECT_FALSE(late.HasBeenNotified());
}

// Cancelling the earliest task does not wake the thread; a task earlier than the time it then
// sleeps until still must.
TEST(TimerQueueTest, CancelledTasksDoNotRunAndLaterOnesStill) {
  TimerQueue q;
  absl::Notification cancelled_ran, ran;
  auto first = q.Schedule(absl::Now() + absl::Hours(1), [&] { cancelled_ran.Notify(); });
  auto soon = q.Schedule(absl::Now() + absl::Milliseconds(1), [&] { cancelled_ran.Notify(); });
  q.Cancel(soon);
  q.Cancel(first);
  q.Schedule(absl::Now() + absl::Milliseconds(10), [&] { ran.Notify(); });
  EXPECT_TRUE(ran.WaitForNotificationWithTimeout(kPatience));
  EXPECT_FALSE(cancelled_ran.HasBeenNotified());
}

TEST(TimerQueueTest, StopDropsPendingTasks) {
  bool ran = false;
  {
    TimerQueue q;
    q.Schedule(absl::Now() + absl::Hours(1), [&] { ran = true; });
    q.Stop();
    q.Schedule(absl::Now(), [&] { ran = true; });  // after Stop: dropped
  }
  EXPECT_FALSE(ran);
}

}  // namespace
}  // namespace kf::client
