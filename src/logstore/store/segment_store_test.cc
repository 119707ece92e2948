// SegmentStore: appends, fencing, sealing, recovery of torn tails and what survives a crash
// over the drop-unsynced-bytes file layer.
#include "logstore/store/segment_store.h"

#include <filesystem>
#include <string>
#include <vector>

#include "common/errors.h"
#include "common/testing/temp_dir.h"
#include "format/segment_object.h"
#include "gtest/gtest.h"
#include "storage/fs/fault_injection_file_system.h"

namespace kf::logstore {
namespace {

std::vector<std::string> Entries(int first, int n) {
  std::vector<std::string> out;
  for (int i = first; i < first + n; ++i) out.push_back("entry-" + std::to_string(i));
  return out;
}

std::vector<std::string_view> Views(const std::vector<std::string>& v) {
  return {v.begin(), v.end()};
}

class SegmentStoreTest : public ::testing::Test {
 protected:
  std::unique_ptr<SegmentStore> OpenStore(fs::FileSystem* fs = nullptr) {
    auto s = SegmentStore::Open({.dir = dir_, .fs = fs});
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? *std::move(s) : nullptr;
  }
  kf::testing::TempDir tmp_{"segstore"};
  const std::string dir_ = tmp_.path();
};

TEST_F(SegmentStoreTest, AppendsReadsAndSkipsResends) {
  auto store = OpenStore();
  auto a = Entries(0, 5);
  ASSERT_EQ(*store->AddEntries("log", 0, 1, 0, Views(a)), 5u);
  // A resend overlapping the end appends only the new part.
  auto b = Entries(3, 4);
  ASSERT_EQ(*store->AddEntries("log", 0, 1, 3, Views(b)), 7u);
  // A gap is refused with the store's end in the message.
  auto c = Entries(9, 1);
  EXPECT_TRUE(absl::IsOutOfRange(store->AddEntries("log", 0, 1, 9, Views(c)).status()));
  auto r = store->Read("log", 0, 2, 100, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->durable_end, 7u);
  ASSERT_EQ(r->entries.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(r->entries[i], "entry-" + std::to_string(i + 2));
  // A byte limit still returns a contiguous prefix.
  r = store->Read("log", 0, 0, 7, 1);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->entries.size(), 1u);
  EXPECT_EQ(r->entries[0], "entry-0");
  EXPECT_TRUE(absl::IsNotFound(store->Read("log", 1, 0, 1, 0).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store->AddEntries("../x", 0, 1, 0, {}).status()));
}

TEST_F(SegmentStoreTest, FenceRejectsLowerEpochsAndSurvivesRestart) {
  {
    auto store = OpenStore();
    auto a = Entries(0, 3);
    ASSERT_TRUE(store->AddEntries("log", 4, 1, 0, Views(a)).ok());
    auto f = store->Fence("log", 4, 2);
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ(f->durable_end, 3u);
    auto late = Entries(3, 1);
    EXPECT_TRUE(IsFenced(store->AddEntries("log", 4, 1, 3, Views(late)).status()));
    EXPECT_TRUE(IsFenced(store->Fence("log", 4, 1).status()));
    // A fence on a segment this store never saw still blocks the old writer there.
    ASSERT_TRUE(store->Fence("log", 5, 2).ok());
  }
  auto store = OpenStore();
  auto late = Entries(3, 1);
  EXPECT_TRUE(IsFenced(store->AddEntries("log", 4, 1, 3, Views(late)).status()));
  EXPECT_TRUE(IsFenced(store->AddEntries("log", 5, 1, 0, Views(late)).status()));
  EXPECT_EQ(*store->AddEntries("log", 4, 2, 3, Views(late)), 4u);
}

TEST_F(SegmentStoreTest, SealStopsWritesAndListsUploads) {
  auto store = OpenStore();
  auto a = Entries(0, 4);
  ASSERT_TRUE(store->AddEntries("log", 0, 1, 0, Views(a)).ok());
  ASSERT_TRUE(store->Seal("log", 0, 1, 3).ok());
  auto more = Entries(4, 1);
  EXPECT_TRUE(IsFenced(store->AddEntries("log", 0, 1, 4, Views(more)).status()));
  // Reads stop at the sealed end, also when the replica holds more.
  auto r = store->Read("log", 0, 0, 10, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->entries.size(), 3u);
  auto pending = store->PendingUploads();
  ASSERT_EQ(pending.size(), 1u);
  EXPECT_EQ(pending[0].second, 3u);
  ASSERT_TRUE(store->MarkUploaded(pending[0].first).ok());
  EXPECT_TRUE(store->PendingUploads().empty());
  ASSERT_TRUE(store->Delete("log", 0).ok());
  EXPECT_TRUE(absl::IsNotFound(store->Read("log", 0, 0, 1, 0).status()));
  store.reset();
  store = OpenStore();
  EXPECT_TRUE(absl::IsNotFound(store->Read("log", 0, 0, 1, 0).status()));
}

TEST_F(SegmentStoreTest, TornTailIsCutOnRecovery) {
  {
    auto store = OpenStore();
    auto a = Entries(0, 3);
    ASSERT_TRUE(store->AddEntries("log", 0, 1, 0, Views(a)).ok());
    auto b = Entries(3, 2);
    ASSERT_TRUE(store->AddEntries("log", 0, 1, 3, Views(b)).ok());
  }
  const std::string path = dir_ + "/log/" + SegmentName(0) + ".log";
  const auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size - 3);  // the second batch is torn
  auto store = OpenStore();
  EXPECT_EQ(store->DurableEnd("log", 0), 3u);
  // Writing continues at the cut.
  auto c = Entries(3, 1);
  EXPECT_EQ(*store->AddEntries("log", 0, 1, 3, Views(c)), 4u);
  store.reset();
  store = OpenStore();
  auto r = store->Read("log", 0, 0, 10, 0);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->entries.size(), 4u);
  EXPECT_EQ(r->entries[3], "entry-3");
}

// Every acknowledged batch survives a power loss; bytes no fdatasync covered are dropped and
// the store recovers to exactly the acknowledged end.
TEST_F(SegmentStoreTest, AcknowledgedEntriesSurviveDropOfUnsyncedBytes) {
  fs::FaultInjectionFileSystem fault(fs::DefaultFileSystem());
  uint64_t acked = 0;
  {
    auto store = OpenStore(&fault);
    for (int i = 0; i < 10; ++i) {
      auto batch = Entries(i * 3, 3);
      auto end = store->AddEntries("log", 7, 1, acked, Views(batch));
      ASSERT_TRUE(end.ok()) << end.status();
      acked = *end;
    }
    ASSERT_TRUE(store->Fence("log", 7, 3).ok());
    // This batch reaches the page cache but its fdatasync fails: never acknowledged.
    fault.FailNthSync(1);
    auto lost = Entries(30, 3);
    EXPECT_FALSE(store->AddEntries("log", 7, 3, acked, Views(lost)).ok());
    // The error is sticky: nothing more is written to the file.
    EXPECT_FALSE(store->AddEntries("log", 7, 3, acked, Views(lost)).ok());
    ASSERT_TRUE(fault.SimulateCrash().ok());
    fault.Restart();
  }
  auto store = OpenStore(&fault);
  EXPECT_EQ(store->DurableEnd("log", 7), acked);
  auto r = store->Read("log", 7, 0, 100, 0);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->entries.size(), acked);
  for (uint64_t i = 0; i < acked; ++i) EXPECT_EQ(r->entries[i], "entry-" + std::to_string(i));
  // The fence was made durable before Fence returned.
  auto late = Entries(30, 1);
  EXPECT_TRUE(IsFenced(store->AddEntries("log", 7, 2, acked, Views(late)).status()));
}

// A crash right after a segment's first acknowledged batch: the file's creation was synced.
TEST_F(SegmentStoreTest, NewSegmentFileSurvivesCrash) {
  fs::FaultInjectionFileSystem fault(fs::DefaultFileSystem());
  {
    auto store = OpenStore(&fault);
    auto a = Entries(0, 2);
    ASSERT_EQ(*store->AddEntries("fresh", 3, 1, 0, Views(a)), 2u);
    ASSERT_TRUE(fault.SimulateCrash().ok());
    fault.Restart();
  }
  auto store = OpenStore(&fault);
  EXPECT_EQ(store->DurableEnd("fresh", 3), 2u);
}

TEST(SegmentObjectTest, RoundTripsAndDetectsDamage) {
  std::string object = format::BeginSegmentObject(5);
  format::AppendSegmentBatch(&object, 0, {"a", "b"});
  format::AppendSegmentBatch(&object, 2, {"c", "d", "e"});
  auto entries = format::ParseSegmentObject(object);
  ASSERT_TRUE(entries.ok()) << entries.status();
  EXPECT_EQ(*entries, (std::vector<std::string>{"a", "b", "c", "d", "e"}));
  std::string flipped = object;
  flipped[flipped.size() - 1] ^= 1;
  EXPECT_TRUE(absl::IsDataLoss(format::ParseSegmentObject(flipped).status()));
  EXPECT_TRUE(
      absl::IsDataLoss(format::ParseSegmentObject(object.substr(0, object.size() - 4)).status()));
  EXPECT_EQ(format::SegmentObjectKey("p", "log", 3), "p/log/00000000000000000003.seg");
}

}  // namespace
}  // namespace kf::logstore
