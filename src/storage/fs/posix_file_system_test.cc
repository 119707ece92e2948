#include "storage/fs/posix_file_system.h"

#include <stdlib.h>

#include <algorithm>

#include "gtest/gtest.h"

namespace kf::fs {
namespace {

std::string MakeTempDir() {
  std::string tmpl = ::testing::TempDir() + "/fs_test_XXXXXX";
  char* dir = ::mkdtemp(tmpl.data());
  EXPECT_NE(dir, nullptr);
  return tmpl;
}

TEST(PosixFileSystemTest, WriteReadRenameRemove) {
  PosixFileSystem fs;
  const std::string dir = MakeTempDir() + "/a/b";
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

TEST(PosixFileSystemTest, WriteFileAtomicallyReplaces) {
  PosixFileSystem fs;
  const std::string path = MakeTempDir() + "/meta";
  ASSERT_TRUE(WriteFileAtomically(&fs, path, "one").ok());
  ASSERT_TRUE(WriteFileAtomically(&fs, path, "two").ok());
  EXPECT_EQ(*ReadFileToString(&fs, path), "two");
}

TEST(PosixFileSystemTest, RenameNoReplaceNeverReplaces) {
  PosixFileSystem fs;
  const std::string dir = MakeTempDir();
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
