// What only the local store promises: its on-disk checks (DATA_LOSS on a damaged file),
// durability across a simulated power loss, and that temp files stay invisible.
#include "storage/object/local_object_store.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"
#include "storage/fs/fault_injection_file_system.h"
#include "storage/fs/posix_file_system.h"

namespace kf::object {
namespace {

absl::Time Deadline() { return absl::Now() + absl::Seconds(10); }

class LocalObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/local_object_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl + "/objects";
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(fs::DirName(root_));
  }
  void Reopen() {
    auto store = LocalObjectStore::Open(&fault_fs_, root_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  // Overwrites bytes of a file in place, behind the store's back.
  void Patch(const std::string& path, uint64_t offset, const std::string& bytes) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }

  fs::PosixFileSystem posix_;
  fs::FaultInjectionFileSystem fault_fs_{&posix_};
  std::string root_;
  std::unique_ptr<LocalObjectStore> store_;
};

TEST_F(LocalObjectStoreTest, FlippedPayloadByteIsDataLoss) {
  ASSERT_TRUE(store_->Put("a/b", "payload bytes", {}, Deadline()).ok());
  Patch(store_->PathOf("a/b"), 24 + 3, "X");
  auto got = store_->Get("a/b", ByteRange::All(), Deadline());
  EXPECT_TRUE(absl::IsDataLoss(got.status())) << got.status();
  auto shared = store_->GetShared("a/b", Deadline());  // the mapped file is checked the same
  EXPECT_TRUE(absl::IsDataLoss(shared.status())) << shared.status();
  // ... unless the caller checks its own format's checksums: then it gets the bytes as stored.
  shared = store_->GetShared("a/b", Deadline(), ObjectStore::Checksum::kCaller);
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_EQ(shared->bytes, "payXoad bytes");
}

TEST_F(LocalObjectStoreTest, FlippedHeaderByteIsDataLoss) {
  ASSERT_TRUE(store_->Put("h", "payload", {}, Deadline()).ok());
  Patch(store_->PathOf("h"), 9, "\x7f");  // inside the length field
  EXPECT_TRUE(absl::IsDataLoss(store_->Head("h", Deadline()).status()));
  EXPECT_TRUE(absl::IsDataLoss(store_->Get("h", ByteRange::Span(0, 2), Deadline()).status()));
}

TEST_F(LocalObjectStoreTest, TruncatedFileIsDataLoss) {
  ASSERT_TRUE(store_->Put("t", std::string(100, 'x'), {}, Deadline()).ok());
  std::filesystem::resize_file(store_->PathOf("t"), 24 + 50);
  EXPECT_TRUE(absl::IsDataLoss(store_->Head("t", Deadline()).status()));
  EXPECT_TRUE(absl::IsDataLoss(store_->Get("t", ByteRange::Span(0, 10), Deadline()).status()));
  EXPECT_TRUE(absl::IsDataLoss(store_->GetShared("t", Deadline()).status()));
}

TEST_F(LocalObjectStoreTest, AcknowledgedPutsSurviveACrash) {
  ASSERT_TRUE(store_->Put("wal/seg/1", "block one", {}, Deadline()).ok());
  ASSERT_TRUE(store_->Put("wal/fence", "term 2", {.if_absent = true}, Deadline()).ok());
  ASSERT_TRUE(store_->Put("wal/seg/1", "block one v2", {}, Deadline()).ok());
  ASSERT_TRUE(fault_fs_.SimulateCrash().ok());
  fault_fs_.Restart();
  Reopen();
  EXPECT_EQ(*store_->Get("wal/seg/1", ByteRange::All(), Deadline()), "block one v2");
  EXPECT_EQ(*store_->Get("wal/fence", ByteRange::All(), Deadline()), "term 2");
}

TEST_F(LocalObjectStoreTest, FailedSyncPublishesNothing) {
  fault_fs_.FailNthSync(1);
  EXPECT_FALSE(store_->Put("x", "data", {}, Deadline()).ok());
  EXPECT_TRUE(absl::IsNotFound(store_->Head("x", Deadline()).status()));
  auto list = store_->List("", "", ObjectStore::kNoLimit, Deadline());
  ASSERT_TRUE(list.ok());
  EXPECT_TRUE(list->objects.empty());
  EXPECT_EQ(posix_.GetChildren(root_)->size(), 0u) << "the temp file is removed";
}

TEST_F(LocalObjectStoreTest, LeftoverTempFilesAreNotListed) {
  ASSERT_TRUE(store_->Put("d/obj", "x", {}, Deadline()).ok());
  std::ofstream(root_ + "/d/obj~tmp.dead.1") << "half";
  auto list = store_->List("", "", ObjectStore::kNoLimit, Deadline());
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->objects.size(), 1u);
  EXPECT_EQ(list->objects[0].key, "d/obj");
  EXPECT_EQ(list->objects[0].size, 1u);
}

TEST_F(LocalObjectStoreTest, EtagIsTheCrcOfTheContents) {
  auto a = store_->Put("e1", "same", {}, Deadline());
  auto b = store_->Put("e2", "same", {}, Deadline());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  EXPECT_EQ(a->size(), 8u);
}

}  // namespace
}  // namespace kf::object
