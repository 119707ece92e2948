#include "rpc/task_threads.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace kf::rpc {
namespace {

TEST(TaskThreadsTest, TasksOfAShardRunInPostingOrderOnOneThread) {
  TaskThreads threads(2, "kf-test");
  absl::Mutex mu;
  std::vector<int> order;
  std::vector<std::thread::id> ran_on;
  absl::Notification done;
  constexpr int kTasks = 1000;
  for (int i = 0; i < kTasks; ++i) {
    threads.Post(1, [&, i] {
      absl::MutexLock l(&mu);
      order.push_back(i);
      ran_on.push_back(std::this_thread::get_id());
      if (i == kTasks - 1) done.Notify();
    });
  }
  done.WaitForNotification();
  absl::MutexLock l(&mu);
  ASSERT_EQ(order.size(), static_cast<size_t>(kTasks));
  for (int i = 0; i < kTasks; ++i) EXPECT_EQ(order[i], i);
  for (const auto& id : ran_on) EXPECT_EQ(id, ran_on.front());
  EXPECT_NE(ran_on.front(), std::this_thread::get_id());
}

TEST(TaskThreadsTest, AKeyKeepsItsShardAndKeysSpreadOverEveryThread) {
  TaskThreads threads(3, "kf-test");
  EXPECT_EQ(threads.ShardFor("ipv4:127.0.0.1:40000"), threads.ShardFor("ipv4:127.0.0.1:40000"));
  std::vector<int> seen(3);
  for (int port = 40000; port < 40064; ++port) {
    const size_t shard = threads.ShardFor("ipv4:127.0.0.1:" + std::to_string(port));
    ASSERT_LT(shard, 3u);
    ++seen[shard];
  }
  for (int n : seen) EXPECT_GT(n, 0);
}

TEST(TaskThreadsTest, DestructorRunsWhatWasPostedBeforeIt) {
  std::atomic<int> ran{0};
  {
    TaskThreads threads(1, "kf-test");
    absl::Notification release;
    threads.Post(0, [&] { release.WaitForNotification(); });
    for (int i = 0; i < 10; ++i) threads.Post(0, [&] { ran.fetch_add(1); });
    release.Notify();
  }
  EXPECT_EQ(ran.load(), 10);
}

TEST(TaskThreadsTest, IdleWhileTheThreadWaitsWithNothingToRun) {
  TaskThreads threads(1, "kf-test");
  absl::Notification started, release, finished;
  threads.Post(0, [&] {
    started.Notify();
    release.WaitForNotification();
  });
  started.WaitForNotification();
  EXPECT_FALSE(threads.Idle(0));  // running a task
  threads.Post(0, [&] { finished.Notify(); });
  release.Notify();
  finished.WaitForNotification();
  // The thread marks itself idle just before it waits again.
  while (!threads.Idle(0)) std::this_thread::yield();
  // A posted task makes it busy at once: queued, then running until it returns.
  absl::Notification release_again;
  threads.Post(0, [&] { release_again.WaitForNotification(); });
  EXPECT_FALSE(threads.Idle(0));
  release_again.Notify();
}

}  // namespace
}  // namespace kf::rpc
