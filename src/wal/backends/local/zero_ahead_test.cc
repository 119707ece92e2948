#include "wal/backends/local/zero_ahead.h"

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace kf::wal::local {
namespace {

// Records appends and zero fills and counts every way they could collide.
class RecordingFile final : public fs::WritableFile {
 public:
  absl::Status Append(std::string_view data) override {
    absl::MutexLock l(&mu_);
    const uint64_t start = size_;
    size_ += data.size();
    if (filling_ && size_ > fill_start_ && start < fill_end_) ++violations_;
    return absl::OkStatus();
  }
  absl::Status ZeroFill(uint64_t offset, uint64_t len) override {
    {
      absl::MutexLock l(&mu_);
      if (offset % ZeroAhead::kPageBytes != 0 || offset < size_ || detached_) ++violations_;
      if (!fills_.empty() && offset != fills_.back().second) ++gaps_;
      filling_ = true;
      fill_start_ = offset;
      fill_end_ = offset + len;
    }
    std::this_thread::yield();  // widens the window an overlapping append would hit
    absl::MutexLock l(&mu_);
    filling_ = false;
    fills_.emplace_back(offset, offset + len);
    return absl::OkStatus();
  }
  absl::Status Sync() override { return absl::OkStatus(); }
  absl::Status Truncate(uint64_t) override { return absl::UnimplementedError("test"); }
  absl::Status Preallocate(uint64_t) override { return absl::UnimplementedError("test"); }
  absl::Status Close() override { return absl::OkStatus(); }
  uint64_t Size() const override {
    absl::MutexLock l(&mu_);
    return size_;
  }

  void MarkDetached() {
    absl::MutexLock l(&mu_);
    detached_ = true;
  }
  // Waits (at most 30 s, then fails) until zeros reach `end`.
  bool AwaitZeroedTo(uint64_t end) {
    absl::MutexLock l(&mu_);
    const auto reached = [this, end]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return !fills_.empty() && fills_.back().second >= end;
    };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), absl::Seconds(30));
  }
  std::vector<std::pair<uint64_t, uint64_t>> fills() const {
    absl::MutexLock l(&mu_);
    return fills_;
  }
  int violations() const {
    absl::MutexLock l(&mu_);
    return violations_;
  }
  int gaps() const {
    absl::MutexLock l(&mu_);
    return gaps_;
  }

 private:
  mutable absl::Mutex mu_;
  uint64_t size_ ABSL_GUARDED_BY(mu_) = 0;
  bool filling_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t fill_start_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t fill_end_ ABSL_GUARDED_BY(mu_) = 0;
  bool detached_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::pair<uint64_t, uint64_t>> fills_ ABSL_GUARDED_BY(mu_);
  int violations_ ABSL_GUARDED_BY(mu_) = 0;
  int gaps_ ABSL_GUARDED_BY(mu_) = 0;
};

// Small groups: zeros start on the page after the data and run, contiguous, past it by the
// distance asked for, never past the limit.
TEST(ZeroAheadTest, ZeroesFromTheNextPageUpToTheLimit) {
  constexpr uint64_t kLimit = ZeroAhead::kChunkBytes + 5 * ZeroAhead::kPageBytes;
  auto file = std::make_shared<RecordingFile>();
  ASSERT_TRUE(file->Append(std::string(5000, 'd')).ok());
  {
    ZeroAhead zero(/*ahead=*/kLimit, kLimit);
    zero.BeforeWrite(file, 5000, 1000);
    ASSERT_TRUE(file->AwaitZeroedTo(kLimit));
    zero.Detach();
    EXPECT_EQ(zero.zeroed_bytes(), kLimit - 8192);
  }
  const auto fills = file->fills();
  ASSERT_FALSE(fills.empty());
  EXPECT_EQ(fills.front().first, 8192u);
  EXPECT_EQ(fills.back().second, kLimit);
  EXPECT_EQ(file->gaps(), 0);
  EXPECT_EQ(file->violations(), 0);
}

// Large groups pay for their fdatasync with data, not metadata: no zeros for them.
TEST(ZeroAheadTest, LeavesLargeGroupsAlone) {
  auto file = std::make_shared<RecordingFile>();
  ZeroAhead zero(8 << 20, 64 << 20);
  for (uint64_t end = 1; end <= 64; ++end) {
    zero.BeforeWrite(file, end << 20, 1 << 20);
    ASSERT_TRUE(file->Append(std::string(1 << 20, 'd')).ok());
  }
  zero.Detach();
  EXPECT_EQ(zero.zeroed_bytes(), 0u);
  EXPECT_TRUE(file->fills().empty());
}

// A writer appending small groups of random sizes and rolling to new files now and then
// never writes into a zero fill in flight, and no zeros land on its data or on a file it let
// go of.
TEST(ZeroAheadTest, NeverOverlapsTheWritersAppends) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<size_t> size(1, 3 * ZeroAhead::kPageBytes);
  std::vector<std::shared_ptr<RecordingFile>> files;
  {
    ZeroAhead zero(1 << 20, 4 << 20);
    for (int segment = 0; segment < 4; ++segment) {
      auto file = std::make_shared<RecordingFile>();
      files.push_back(file);
      for (int group = 0; group < 1000; ++group) {
        const std::string data(size(rng), 'd');
        zero.BeforeWrite(file, file->Size() + data.size(), data.size());
        ASSERT_TRUE(file->Append(data).ok());
      }
      zero.Detach();
      file->MarkDetached();
    }
  }
  for (const auto& file : files) EXPECT_EQ(file->violations(), 0);
}

}  // namespace
}  // namespace kf::wal::local
