#include "storage/fs/fault_injection_file_system.h"

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "storage/fs/posix_file_system.h"

namespace kf::fs {
namespace {

class FaultInjectionTest : public ::testing::Test {
 protected:
  std::string Path(const std::string& name) { return JoinPath(dir_, name); }
  std::string Contents(const std::string& name) {
    auto s = ReadFileToString(&posix_, Path(name));
    return s.ok() ? *s : "<" + s.status().ToString() + ">";
  }

  kf::testing::TempDir tmp_{"fi_test"};
  const std::string dir_ = tmp_.path();
  PosixFileSystem posix_;
  FaultInjectionFileSystem fs_{&posix_};
};

TEST_F(FaultInjectionTest, CrashKeepsSyncedPrefixOfDurableFile) {
  auto w = fs_.OpenWritable(Path("log"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Append("durable").ok());
  ASSERT_TRUE((*w)->Sync().ok());
  ASSERT_TRUE(fs_.SyncDir(dir_).ok());
  ASSERT_TRUE((*w)->Append("-lost").ok());
  EXPECT_EQ(Contents("log"), "durable-lost");
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents("log"), "durable");
  // The old handle belongs to the dead process.
  EXPECT_FALSE((*w)->Append("x").ok());
  EXPECT_FALSE((*w)->Sync().ok());
  EXPECT_FALSE(fs_.OpenWritable(Path("other"), OpenMode::kCreateOrAppend).ok());
  fs_.Restart();
  auto w2 = fs_.OpenWritable(Path("log"), OpenMode::kAppendExisting);
  ASSERT_TRUE(w2.ok());
  ASSERT_TRUE((*w2)->Append("+more").ok());
  EXPECT_EQ(Contents("log"), "durable+more");
}

TEST_F(FaultInjectionTest, CrashRemovesFileWhoseCreationWasNotSynced) {
  auto w = fs_.OpenWritable(Path("new"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Append("data").ok());
  ASSERT_TRUE((*w)->Sync().ok());  // data synced, but the directory entry is not
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_FALSE(*posix_.FileExists(Path("new")));
}

TEST_F(FaultInjectionTest, PreexistingFilesAreDurable) {
  ASSERT_TRUE(WriteFileAtomically(&posix_, Path("old"), "before").ok());
  auto w = fs_.OpenWritable(Path("old"), OpenMode::kAppendExisting);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Append("after").ok());
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents("old"), "before");
}

TEST_F(FaultInjectionTest, UnsyncedRenameIsUndone) {
  ASSERT_TRUE(WriteFileAtomically(&fs_, Path("meta"), "v1").ok());
  // Replace without the final SyncDir.
  auto w = fs_.OpenWritable(Path("meta.tmp"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Append("v2").ok());
  ASSERT_TRUE((*w)->Sync().ok());
  ASSERT_TRUE(fs_.RenameFile(Path("meta.tmp"), Path("meta")).ok());
  EXPECT_EQ(Contents("meta"), "v2");
  auto children = fs_.GetChildren(dir_);
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(children->size(), 1u) << "backup files must be hidden";
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents("meta"), "v1");
  EXPECT_FALSE(*posix_.FileExists(Path("meta.tmp")));  // never made durable
}

TEST_F(FaultInjectionTest, UnsyncedRenameNoReplaceIsUndone) {
  ASSERT_TRUE(WriteFileAtomically(&fs_, Path("obj.tmp"), "v1").ok());
  ASSERT_TRUE(fs_.RenameFileNoReplace(Path("obj.tmp"), Path("obj")).ok());
  EXPECT_EQ(Contents("obj"), "v1");
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  fs_.Restart();
  EXPECT_EQ(Contents("obj.tmp"), "v1");
  EXPECT_FALSE(*posix_.FileExists(Path("obj")));
}

TEST_F(FaultInjectionTest, SyncedRenameSurvives) {
  ASSERT_TRUE(WriteFileAtomically(&fs_, Path("meta"), "v1").ok());
  ASSERT_TRUE(WriteFileAtomically(&fs_, Path("meta"), "v2").ok());
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents("meta"), "v2");
  auto children = posix_.GetChildren(dir_);
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(children->size(), 1u) << "backups are removed once the rename is durable";
}

TEST_F(FaultInjectionTest, FailNthWriteAndSync) {
  auto w = fs_.OpenWritable(Path("log"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(fs_.SyncDir(dir_).ok());
  fs_.FailNthWrite(2);
  EXPECT_TRUE((*w)->Append("a").ok());
  EXPECT_FALSE((*w)->Append("b").ok());
  EXPECT_TRUE((*w)->Append("c").ok());
  fs_.FailNthSync(1);
  EXPECT_FALSE((*w)->Sync().ok());
  EXPECT_EQ(fs_.sync_count(), 0u);
  EXPECT_EQ(fs_.write_count(), 2u);
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents("log"), "") << "a failed sync makes nothing durable";
}

TEST_F(FaultInjectionTest, PartialWrite) {
  auto w = fs_.OpenWritable(Path("log"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok());
  fs_.PartialNthWrite(1, 3);
  EXPECT_FALSE((*w)->Append("abcdef").ok());
  EXPECT_EQ(Contents("log"), "abc");
}

TEST_F(FaultInjectionTest, SyncFromAnotherHandleCoversTheInode) {
  auto w = fs_.OpenWritable(Path("log"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(fs_.SyncDir(dir_).ok());
  ASSERT_TRUE((*w)->Append("written-by-one").ok());
  auto other = fs_.OpenWritable(Path("log"), OpenMode::kAppendExisting);
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE((*other)->Sync().ok());
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents("log"), "written-by-one");
  EXPECT_EQ(fs_.sync_count(), 1u);
}

// A synced reservation survives a crash; what was written into it after the last Sync reads
// back as zeros, what was written before it survives.
TEST_F(FaultInjectionTest, CrashKeepsSyncedPreallocationAsZeros) {
  auto w = fs_.OpenWritable(Path("log"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(fs_.SyncDir(dir_).ok());
  ASSERT_TRUE((*w)->Preallocate(16).ok());
  ASSERT_TRUE((*w)->Append("durable").ok());
  ASSERT_TRUE((*w)->Sync().ok());
  ASSERT_TRUE((*w)->Append("lost").ok());
  EXPECT_EQ((*w)->Size(), 11u);
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents("log"), std::string("durable") + std::string(9, '\0'));
}

TEST_F(FaultInjectionTest, CrashDropsUnsyncedPreallocation) {
  auto w = fs_.OpenWritable(Path("log"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(fs_.SyncDir(dir_).ok());
  ASSERT_TRUE((*w)->Append("durable").ok());
  ASSERT_TRUE((*w)->Sync().ok());
  ASSERT_TRUE((*w)->Preallocate(16).ok());
  ASSERT_TRUE((*w)->Append("lost").ok());
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents("log"), "durable");
}

// Zeros from ZeroFill are durable at once; appends over them after the last Sync read back as
// zeros, and the zero fill does not count as a Sync of the appends.
TEST_F(FaultInjectionTest, CrashKeepsZeroFillAndDropsUnsyncedAppendsOverIt) {
  auto w = fs_.OpenWritable(Path("log"), OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(fs_.SyncDir(dir_).ok());
  ASSERT_TRUE((*w)->Append("durable").ok());
  ASSERT_TRUE((*w)->Sync().ok());
  ASSERT_TRUE((*w)->Append("lost").ok());
  ASSERT_TRUE((*w)->ZeroFill(4096, 4096).ok());
  ASSERT_TRUE((*w)->Append("lost too").ok());
  EXPECT_EQ(fs_.sync_count(), 1u);
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  EXPECT_EQ(Contents("log"), std::string("durable") + std::string(8192 - 7, '\0'));
}

}  // namespace
}  // namespace kf::fs
