#include "storage/tso/timestamp_allocator.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "storage/fs/fault_injection_file_system.h"
#include "storage/fs/posix_file_system.h"

namespace kf {
namespace {

class TimestampAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kf-tso-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string path() const { return (dir_ / "tso").string(); }
  std::filesystem::path dir_;
};

TEST_F(TimestampAllocatorTest, StrictlyIncreasingWithinProcess) {
  uint64_t now = 1000;
  auto a = TimestampAllocator::Open(path(), {.window_ms = 100, .now_ms = [&] { return now; }});
  ASSERT_TRUE(a.ok());
  TimeTick prev;
  for (int i = 0; i < 1000; ++i) {
    if (i % 100 == 0) now += 7;
    if (i == 500) now -= 50;  // the clock steps backwards
    auto t = (*a)->Allocate(i % 3 + 1);
    ASSERT_TRUE(t.ok());
    EXPECT_GT(*t, prev);
    prev = TimeTick(t->value() + i % 3);
  }
}

TEST_F(TimestampAllocatorTest, MonotonicAcrossRestartEvenWhenClockGoesBack) {
  uint64_t now = 5000;
  TimeTick last;
  {
    auto a = TimestampAllocator::Open(path(), {.window_ms = 1000, .now_ms = [&] { return now; }});
    ASSERT_TRUE(a.ok());
    for (int i = 0; i < 10; ++i) last = *(*a)->Allocate();
  }
  now = 10;  // restarted on a machine whose clock is far behind
  auto b = TimestampAllocator::Open(path(), {.window_ms = 1000, .now_ms = [&] { return now; }});
  ASSERT_TRUE(b.ok());
  EXPECT_GT(*(*b)->Allocate(), last);
}

TEST_F(TimestampAllocatorTest, ObserveRaisesFloor) {
  auto a = TimestampAllocator::Open(path(), {.window_ms = 10, .now_ms = [] { return 1; }});
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE((*a)->Observe(ComposeTimeTick(999, 5)).ok());
  EXPECT_GT(*(*a)->Allocate(), ComposeTimeTick(999, 5));
}

// Allocation below the mark is lock-free; with a tiny window the mark is raised all the time,
// so threads race between the CAS fast path and the locked slow path.
TEST_F(TimestampAllocatorTest, ConcurrentAllocationsAreUniqueAndIncreasingPerThread) {
  std::atomic<uint64_t> now{1000};
  auto a = TimestampAllocator::Open(path(), {.window_ms = 1, .now_ms = [&] { return now.load(); }});
  ASSERT_TRUE(a.ok());
  constexpr int kThreads = 4, kPerThread = 5000;
  std::vector<std::vector<uint64_t>> got(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        if (t == 0 && i % 50 == 0) now.fetch_add(1);
        auto tt = (*a)->Allocate(i % 3 + 1);
        ASSERT_TRUE(tt.ok());
        for (int k = 0; k < i % 3 + 1; ++k) got[t].push_back(tt->value() + k);
      }
    });
  }
  for (auto& th : threads) th.join();
  std::set<uint64_t> all;
  for (const auto& v : got) {
    EXPECT_TRUE(std::is_sorted(v.begin(), v.end()));
    all.insert(v.begin(), v.end());
  }
  size_t total = 0;
  for (const auto& v : got) total += v.size();
  EXPECT_EQ(all.size(), total) << "a timestamp was handed out twice";
  // Every timestamp handed out lies below the durable mark.
  std::ifstream in(path());
  uint64_t mark = 0;
  in >> mark;
  EXPECT_LT(*all.rbegin(), mark);
}

// A failed mark write refuses exactly the allocations that would cross the old mark.
TEST_F(TimestampAllocatorTest, FailedMarkWriteRefusesAllocationsBeyondTheMark) {
  fs::PosixFileSystem posix;
  fs::FaultInjectionFileSystem faulty(&posix);
  uint64_t now = 100;
  auto a = TimestampAllocator::Open(
      path(), {.window_ms = 10, .now_ms = [&] { return now; }, .fs = &faulty});
  ASSERT_TRUE(a.ok());
  auto first = (*a)->Allocate();  // persists a mark at 110 ms
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE((*a)->Allocate().ok());  // below the mark: no write
  faulty.FailNthWrite(1);
  now = 200;  // beyond the mark: needs a write, which fails
  EXPECT_FALSE((*a)->Allocate().ok());
  now = 105;  // the clock went back below the mark: allowed again, still increasing
  auto below = (*a)->Allocate();
  ASSERT_TRUE(below.ok());
  EXPECT_GT(*below, *first);
  now = 200;  // the write works again
  auto after = (*a)->Allocate();
  ASSERT_TRUE(after.ok());
  EXPECT_GE(PhysicalMs(*after), 200u);
}

TEST_F(TimestampAllocatorTest, CorruptMarkIsDataLoss) {
  std::ofstream(path()) << "garbage";
  auto a = TimestampAllocator::Open(path(), {});
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace kf
