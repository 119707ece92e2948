#include "storage/tso/timestamp_allocator.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

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

TEST_F(TimestampAllocatorTest, CorruptMarkIsDataLoss) {
  std::ofstream(path()) << "garbage";
  auto a = TimestampAllocator::Open(path(), {});
  EXPECT_EQ(a.status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace kf
