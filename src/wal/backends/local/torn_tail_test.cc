// Acceptance: a torn or corrupted last batch is dropped or reported as DATA_LOSS, never read
// back as a wrong entry; damage before valid data is DATA_LOSS.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/synchronization/notification.h"
#include "common/errors.h"
#include "common/testing/temp_dir.h"
#include "format/record_batch.h"
#include "gtest/gtest.h"
#include "wal/backends/local/local_opener.h"
#include "wal/backends/local/segment_reader.h"
#include "wal/backends/local/test_util.h"

namespace kf::wal::local {
namespace {

namespace stdfs = std::filesystem;
using testing::AppendSync;
using testing::ReadAll;
using testing::Writer;

std::string ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

class TornTailTest : public ::testing::Test {
 protected:
  void SetUp() override {
    LocalOpenerOptions o;
    o.root = root_;
    opener_ = NewLocalOpener(o);
    auto b = opener_->Open(Writer("p", 1));
    ASSERT_TRUE(b.ok());
    for (int i = 0; i < 10; ++i) {
      written_.push_back("entry-" + std::to_string(i) + std::string(i * 3, 'x'));
    }
    for (int i = 0; i < 9; ++i) ASSERT_TRUE(AppendSync(b->get(), written_[i]).ok());
    // Hold the writer in entry 9's callback so entries 10..12 queue up behind it and form
    // one batch, the last one.
    absl::Notification entered, release;
    ASSERT_TRUE((*b)->Append(written_[9],
                             [&](absl::Status) {
                               entered.Notify();
                               release.WaitForNotification();
                             })
                    .ok());
    entered.WaitForNotification();
    for (int i = 10; i < 13; ++i) {
      written_.push_back("last-" + std::to_string(i) + std::string(40, 'y'));
    }
    std::promise<absl::Status> last_done;
    ASSERT_TRUE((*b)->Append(written_[10], nullptr).ok());
    ASSERT_TRUE((*b)->Append(written_[11], nullptr).ok());
    ASSERT_TRUE((*b)->Append(written_[12], [&](absl::Status s) { last_done.set_value(s); }).ok());
    release.Notify();
    ASSERT_TRUE(last_done.get_future().get().ok());
    ASSERT_TRUE((*b)->Close().ok());
    original_ = ReadBytes(SegmentPath());
    // Find the last batch by walking the headers (how entries were grouped is up to the
    // writer's pipelining).
    for (uint64_t pos = 0; pos < original_.size();) {
      format::BatchHeader h;
      ASSERT_TRUE(format::ParseBatchHeader(original_.data() + pos, &h));
      last_start_ = pos;
      kept_ = static_cast<int>(h.base_offset);
      if (h.base_offset == 5) {  // appended and synced alone: a batch of its own
        batch5_start_ = pos;
        batch5_end_ = pos + h.total_size();
      }
      pos += h.total_size();
    }
    ASSERT_GT(batch5_end_, 0u);
    ASSERT_GT(original_.size(), last_start_);
  }

  std::string SegmentPath() {
    for (const auto& e : stdfs::directory_iterator(root_ + "/p")) {
      if (e.path().extension() == ".log") return e.path().string();
    }
    return "";
  }

  // Reopens after damage; every entry read must be what was written at that id.
  // Returns the number of entries recovered, or -1 for DATA_LOSS.
  int ReopenAndCheck(const std::string& what) {
    auto b = opener_->Open(Writer("p", 1));
    if (!b.ok()) {
      EXPECT_TRUE(absl::IsDataLoss(b.status())) << what << ": " << b.status();
      return -1;
    }
    auto all = ReadAll(b->get());
    if (!all.ok()) {
      EXPECT_TRUE(absl::IsDataLoss(all.status())) << what << ": " << all.status();
      return -1;
    }
    for (const auto& e : *all) {
      EXPECT_LT(e.id.entry(), written_.size()) << what;
      if (e.id.entry() < written_.size()) {
        EXPECT_EQ(e.data, written_[e.id.entry()]) << what;
      }
    }
    // The log stays appendable and dense after recovery.
    auto next = AppendSync(b->get(), "after");
    EXPECT_TRUE(next.ok()) << what << ": " << next.status();
    if (next.ok()) {
      EXPECT_EQ(next->entry(), all->size()) << what;
    }
    return static_cast<int>(all->size());
  }

  kf::testing::TempDir dir_{"torn"};
  std::string root_ = dir_.path();
  std::unique_ptr<WalOpener> opener_;
  std::vector<std::string> written_;
  int kept_ = 0;  // entries before the last batch
  uint64_t last_start_ = 0, batch5_start_ = 0, batch5_end_ = 0;
  std::string original_;
};

TEST_F(TornTailTest, EveryTruncationPointOfTheLastBatch) {
  const std::string path = SegmentPath();
  for (uint64_t cut = last_start_; cut < original_.size(); ++cut) {
    WriteBytes(path, original_.substr(0, cut));
    int n = ReopenAndCheck("cut at " + std::to_string(cut));
    EXPECT_EQ(n, kept_) << "a torn last batch is dropped, everything before stays; cut " << cut;
    // Undo the extra "after" entry for the next round.
    for (const auto& e : stdfs::directory_iterator(root_ + "/p")) {
      if (e.path().extension() == ".log" && e.path().string() != path) stdfs::remove(e.path());
    }
  }
  WriteBytes(path, original_);
  EXPECT_EQ(ReopenAndCheck("intact"), 13);
}

TEST_F(TornTailTest, EveryByteFlipOfTheLastBatch) {
  const std::string path = SegmentPath();
  int dropped = 0, data_loss = 0;
  for (uint64_t pos = last_start_; pos < original_.size(); ++pos) {
    std::string damaged = original_;
    damaged[pos] = static_cast<char>(damaged[pos] ^ 0x5a);
    WriteBytes(path, damaged);
    int n = ReopenAndCheck("flip at " + std::to_string(pos));
    if (n == -1) {
      ++data_loss;
    } else {
      EXPECT_EQ(n, kept_) << "flip at " << pos;
      ++dropped;
    }
  }
  EXPECT_GT(dropped, 0);
  RecordProperty("dropped", dropped);
  RecordProperty("data_loss", data_loss);
}

TEST_F(TornTailTest, DamageBeforeValidDataIsDataLoss) {
  const std::string path = SegmentPath();
  for (uint64_t pos : {batch5_start_, batch5_start_ + 3, batch5_start_ + 13,
                       (batch5_start_ + batch5_end_) / 2, batch5_end_ - 1}) {
    std::string damaged = original_;
    damaged[pos] = static_cast<char>(damaged[pos] ^ 0x01);
    WriteBytes(path, damaged);
    auto b = opener_->Open(Writer("p", 1));
    EXPECT_TRUE(absl::IsDataLoss(b.status())) << "flip at " << pos << ": " << b.status();
    if (!b.ok()) {
      EXPECT_NE(b.status().message().find(".log"), absl::string_view::npos) << b.status();
    }
  }
}

TEST_F(TornTailTest, DamageInAnOlderSegmentIsDataLossOnRead) {
  // Start a new segment at a new term, then damage the first (now sealed) one.
  {
    auto b = opener_->Open(Writer("p", 2));
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_TRUE(AppendSync(b->get(), "t2").ok());
  }
  std::string path;
  for (const auto& e : stdfs::directory_iterator(root_ + "/p")) {
    if (e.path().filename().string().starts_with("00000000000000000000-")) path = e.path();
  }
  ASSERT_FALSE(path.empty());
  std::string damaged = original_;
  damaged[batch5_start_ + 30] ^= 0x10;
  WriteBytes(path, damaged);
  auto b = opener_->Open(Writer("p", 2));
  ASSERT_TRUE(b.ok()) << b.status();
  auto all = ReadAll(b->get());
  EXPECT_TRUE(absl::IsDataLoss(all.status())) << all.status();
}

// A segment another process is still appending to (a fenced writer while its successor seals
// the segment): its first read of a batch position sees zeros, every later read the batches
// written meanwhile.
class GrowingFile final : public fs::RandomAccessFile {
 public:
  GrowingFile(std::string before, std::string after)
      : before_(std::move(before)), after_(std::move(after)) {}
  absl::StatusOr<size_t> ReadAt(uint64_t offset, size_t n, char* scratch) const override {
    const std::string& now = reads_++ == 0 ? before_ : after_;
    if (offset >= now.size()) return 0;
    const size_t got = std::min<size_t>(n, now.size() - offset);
    std::memcpy(scratch, now.data() + offset, got);
    return got;
  }
  absl::StatusOr<uint64_t> Size() const override { return after_.size(); }

 private:
  const std::string before_, after_;
  mutable int reads_ = 0;
};

TEST(ScanSegmentTest, BatchesWrittenDuringTheScanAreNotDamage) {
  std::string data;
  uint64_t base = 0;
  for (const char* entry : {"first", "second", "third"}) {
    format::BatchBuilder b;
    b.Begin(&data, base++);
    b.Add(entry);
    b.Finish();
  }
  format::BatchHeader h;
  ASSERT_TRUE(format::ParseBatchHeader(data.data(), &h));
  const std::string zeros(4096, '\0');
  // First read: only the first batch is there; then all three.
  GrowingFile file(
      data.substr(0, h.total_size()) + std::string(data.size() - h.total_size(), '\0') + zeros,
      data + zeros);
  auto scan = ScanSegment(&file, "growing.log", data.size() + zeros.size(), 0);
  ASSERT_TRUE(scan.ok()) << scan.status();
  EXPECT_EQ(scan->valid_end, data.size());
  EXPECT_EQ(scan->end_offset, 3u);
  EXPECT_TRUE(scan->torn);  // the zeros after the data
}

}  // namespace
}  // namespace kf::wal::local
