#include "storage/fs/posix_file_system.h"

#include <unistd.h>

#include <algorithm>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace kf::fs {
namespace {

using kf::testing::TempDir;

TEST(PosixFileSystemTest, WriteReadRenameRemove) {
  PosixFileSystem fs;
  TempDir tmp("fs_test");
  const std::string dir = tmp.path() + "/a/b";
  ASSERT_TRUE(fs.CreateDirs(dir).ok());
  const std::string path = JoinPath(dir, "f");
  auto w = fs.OpenWritable(path, OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->Append("hello ").ok());
  ASSERT_TRUE((*w)->Append("world").ok());
  ASSERT_TRUE((*w)->Sync().ok());
  EXPECT_EQ((*w)->Size(), 11u);
  ASSERT_TRUE((*w)->Truncate(5).ok());
  ASSERT_TRUE((*w)->Append("!").ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_TRUE(absl::IsAlreadyExists(fs.OpenWritable(path, OpenMode::kCreateExclusive).status()));
  auto content = ReadFileToString(&fs, path);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, "hello!");

  auto r = fs.OpenRandomAccess(path);
  ASSERT_TRUE(r.ok());
  char buf[16];
  auto n = (*r)->ReadAt(2, sizeof buf, buf);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(buf, *n), "llo!");

  ASSERT_TRUE(fs.RenameFile(path, path + "2").ok());
  EXPECT_FALSE(*fs.FileExists(path));
  auto children = fs.GetChildren(dir);
  ASSERT_TRUE(children.ok());
  EXPECT_EQ(*children, std::vector<std::string>{"f2"});
  ASSERT_TRUE(fs.RemoveFile(path + "2").ok());
  EXPECT_TRUE(absl::IsNotFound(fs.GetFileSize(path + "2").status()));
  EXPECT_TRUE(absl::IsNotFound(fs.OpenWritable(path, OpenMode::kAppendExisting).status()));
}

// A lister keeps its directory open; each List sees what was created or removed since the last
// (the local WAL's fence check must see a fence written by another process at once).
TEST(PosixFileSystemTest, ADirectoryListerSeesEachChange) {
  PosixFileSystem fs;
  TempDir tmp("fs_test");
  EXPECT_TRUE(absl::IsNotFound(fs.OpenDirectoryLister(tmp.path() + "/missing").status()));
  auto lister = fs.OpenDirectoryLister(tmp.path());
  ASSERT_TRUE(lister.ok()) << lister.status();
  auto names = [&] {
    auto listed = (*lister)->List();
    EXPECT_TRUE(listed.ok()) << listed.status();
    std::vector<std::string> out = listed.value_or(std::vector<std::string>{});
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_TRUE(names().empty());
  ASSERT_TRUE(WriteFileAtomically(&fs, JoinPath(tmp.path(), "00000000000000000002"), "").ok());
  EXPECT_EQ(names(), std::vector<std::string>{"00000000000000000002"});
  ASSERT_TRUE(WriteFileAtomically(&fs, JoinPath(tmp.path(), "00000000000000000003"), "").ok());
  EXPECT_EQ(names(), (std::vector<std::string>{"00000000000000000002", "00000000000000000003"}));
  ASSERT_TRUE(fs.RemoveFile(JoinPath(tmp.path(), "00000000000000000002")).ok());
  EXPECT_EQ(names(), std::vector<std::string>{"00000000000000000003"});

  // Removed, the directory it holds open lists as NOT_FOUND (LocalBackend then looks by path).
  const std::string sub = JoinPath(tmp.path(), "sub");
  ASSERT_TRUE(fs.CreateDirs(sub).ok());
  auto gone = fs.OpenDirectoryLister(sub);
  ASSERT_TRUE(gone.ok()) << gone.status();
  ASSERT_EQ(::rmdir(sub.c_str()), 0);
  EXPECT_TRUE(absl::IsNotFound((*gone)->List().status())) << (*gone)->List().status();
}

// Appends go on at the data's end inside the reservation; the size on disk is the
// reservation's, and a truncate cuts the reservation too.
TEST(PosixFileSystemTest, PreallocateKeepsAppendPosition) {
  PosixFileSystem fs;
  TempDir tmp("fs_test");
  const std::string path = JoinPath(tmp.path(), "f");
  auto w = fs.OpenWritable(path, OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->Append("abc").ok());
  absl::Status s = (*w)->Preallocate(4096);
  if (absl::IsUnimplemented(s)) GTEST_SKIP() << s;
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_TRUE((*w)->Append("def").ok());
  ASSERT_TRUE((*w)->Sync().ok());
  EXPECT_EQ((*w)->Size(), 6u);
  EXPECT_EQ(*fs.GetFileSize(path), 4096u);
  auto content = ReadFileToString(&fs, path);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, "abcdef" + std::string(4090, '\0'));

  ASSERT_TRUE((*w)->Truncate(6).ok());
  ASSERT_TRUE((*w)->Close().ok());
  EXPECT_EQ(*ReadFileToString(&fs, path), "abcdef");
  // Reopened, the reservation counts as content: the handle's size is the file's.
  auto again = fs.OpenWritable(path, OpenMode::kAppendExisting);
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*again)->Preallocate(100).ok());
  EXPECT_EQ((*again)->Size(), 6u);
  ASSERT_TRUE((*again)->Append("g").ok());
  EXPECT_EQ(ReadFileToString(&fs, path)->substr(0, 8), std::string("abcdefg") + '\0');
}

// Zeros land at the offset, past the data, which they leave alone; appends then go on at the
// data's end and overwrite them.
TEST(PosixFileSystemTest, ZeroFillWritesZerosPastTheData) {
  PosixFileSystem fs;
  TempDir tmp("fs_test");
  const std::string path = JoinPath(tmp.path(), "f");
  auto w = fs.OpenWritable(path, OpenMode::kCreateExclusive);
  ASSERT_TRUE(w.ok()) << w.status();
  ASSERT_TRUE((*w)->Append(std::string(5000, 'a')).ok());
  ASSERT_TRUE((*w)->ZeroFill(8192, 3 * 4096).ok());
  EXPECT_EQ((*w)->Size(), 5000u);
  EXPECT_EQ(*fs.GetFileSize(path), 8192u + 3 * 4096);
  ASSERT_TRUE((*w)->Append(std::string(4000, 'b')).ok());
  ASSERT_TRUE((*w)->Sync().ok());
  auto content = ReadFileToString(&fs, path);
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(*content, std::string(5000, 'a') + std::string(4000, 'b') +
                          std::string(8192 + 3 * 4096 - 9000, '\0'));
  ASSERT_TRUE((*w)->Close().ok());
}

// MapCopy: the bytes, mapped from a file that has no name in the directory.
TEST(PosixFileSystemTest, MapCopyMapsAnUnnamedCopy) {
  PosixFileSystem fs;
  TempDir tmp("fs_test");
  std::string bytes(3 * 4096 + 17, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  absl::StatusOr<SharedBytes> mapped = fs.MapCopy(tmp.path(), bytes);
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  EXPECT_TRUE(mapped->mapped);
  EXPECT_NE(mapped->bytes.data(), bytes.data());
  EXPECT_EQ(mapped->bytes, bytes);
  auto children = fs.GetChildren(tmp.path());
  ASSERT_TRUE(children.ok());
  EXPECT_TRUE(children->empty());
  EXPECT_TRUE(fs.MapCopy(tmp.path(), "")->bytes.empty());
  EXPECT_TRUE(absl::IsNotFound(fs.MapCopy(tmp.path() + "/missing", bytes).status()));
}

TEST(PosixFileSystemTest, WriteFileAtomicallyReplaces) {
  PosixFileSystem fs;
  TempDir tmp("fs_test");
  const std::string path = tmp.path() + "/meta";
  ASSERT_TRUE(WriteFileAtomically(&fs, path, "one").ok());
  ASSERT_TRUE(WriteFileAtomically(&fs, path, "two").ok());
  EXPECT_EQ(*ReadFileToString(&fs, path), "two");
}

TEST(PosixFileSystemTest, RenameNoReplaceNeverReplaces) {
  PosixFileSystem fs;
  TempDir tmp("fs_test");
  const std::string& dir = tmp.path();
  ASSERT_TRUE(WriteFileAtomically(&fs, dir + "/a", "first").ok());
  ASSERT_TRUE(WriteFileAtomically(&fs, dir + "/b", "second").ok());
  EXPECT_TRUE(absl::IsAlreadyExists(fs.RenameFileNoReplace(dir + "/b", dir + "/a")));
  EXPECT_EQ(*ReadFileToString(&fs, dir + "/a"), "first");
  EXPECT_TRUE(*fs.FileExists(dir + "/b"));
  ASSERT_TRUE(fs.RenameFileNoReplace(dir + "/b", dir + "/c").ok());
  EXPECT_EQ(*ReadFileToString(&fs, dir + "/c"), "second");
  EXPECT_FALSE(*fs.FileExists(dir + "/b"));
}

}  // namespace
}  // namespace kf::fs
