#include "storage/fs/directory_change_watch.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "storage/fs/file_system.h"
#include "storage/fs/posix_file_system.h"

namespace kf::fs {
namespace {

using kf::testing::TempDir;

class DirectoryChangeWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fd_ = ::open(tmp_.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fd_, 0);
  }
  void TearDown() override { ::close(fd_); }

  // A watch on the temp dir; the test is skipped where none can be had (not a local file
  // system, or no inotify), since the lister then lists every time.
  std::unique_ptr<DirectoryChangeWatch> Watch() {
    auto watch = DirectoryChangeWatch::Open(fd_);
    if (watch == nullptr) ADD_FAILURE() << "no watch on " << tmp_.path();
    return watch;
  }
  void Create(const std::string& name) {
    ASSERT_TRUE(WriteFileAtomically(&fs_, JoinPath(tmp_.path(), name), "").ok());
  }

  PosixFileSystem fs_;
  TempDir tmp_{"change_watch"};
  int fd_ = -1;
};

TEST_F(DirectoryChangeWatchTest, TellsEachKindOfChangeOnceAndNothingElse) {
  auto watch = Watch();
  ASSERT_NE(watch, nullptr);
  EXPECT_FALSE(watch->Changed());
  Create("a");  // a temp file written, then renamed in
  EXPECT_TRUE(watch->Changed());
  EXPECT_FALSE(watch->Changed());
  ASSERT_EQ(::rename(JoinPath(tmp_.path(), "a").c_str(), JoinPath(tmp_.path(), "b").c_str()), 0);
  EXPECT_TRUE(watch->Changed());
  ASSERT_TRUE(fs_.RemoveFile(JoinPath(tmp_.path(), "b")).ok());
  EXPECT_TRUE(watch->Changed());
  const std::string sub = JoinPath(tmp_.path(), "sub");
  ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
  EXPECT_TRUE(watch->Changed());
  // A change below an entry is not the directory's.
  ASSERT_TRUE(WriteFileAtomically(&fs_, JoinPath(sub, "deeper"), "").ok());
  EXPECT_FALSE(watch->Changed());
}

// Watches of one directory share the kernel's watch: each sees every change, and one going
// away leaves the other watching.
TEST_F(DirectoryChangeWatchTest, TwoWatchesOfOneDirectoryEachSeeTheChange) {
  auto first = Watch();
  auto second = Watch();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  Create("a");
  EXPECT_TRUE(first->Changed());
  EXPECT_TRUE(second->Changed());
  first.reset();
  Create("b");
  EXPECT_TRUE(second->Changed());
  EXPECT_FALSE(second->Changed());
}

// A child of fork() must not read the parent's events (it would take them from the parent):
// it makes its own instance, and the watches it inherited report a change at every look.
TEST_F(DirectoryChangeWatchTest, AForkedChildLeavesItsParentsEventsAlone) {
  auto parents = Watch();
  ASSERT_NE(parents, nullptr);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto own = DirectoryChangeWatch::Open(fd_);
    int failures = own == nullptr ? 1 : 0;
    if (::mkdir(JoinPath(tmp_.path(), "made-by-child").c_str(), 0755) != 0) failures |= 2;
    if (own != nullptr && !own->Changed()) failures |= 4;
    if (own != nullptr && own->Changed()) failures |= 8;
    if (!parents->Changed() || !parents->Changed()) failures |= 16;  // inherited: always
    ::_exit(failures);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_TRUE(parents->Changed());  // the child's change, still there for the parent
  EXPECT_FALSE(parents->Changed());
}

// A lister tells an unchanged directory without listing it, and a change at once.
TEST_F(DirectoryChangeWatchTest, AListerTellsAnUnchangedDirectoryAndEachChange) {
  auto lister = fs_.OpenDirectoryLister(tmp_.path());
  ASSERT_TRUE(lister.ok()) << lister.status();
  EXPECT_FALSE((*lister)->Unchanged());  // nothing listed yet
  Create("00000000000000000002");
  auto names = (*lister)->List();
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(*names, std::vector<std::string>{"00000000000000000002"});
  EXPECT_TRUE((*lister)->Unchanged());
  EXPECT_TRUE((*lister)->Unchanged());
  ASSERT_TRUE(fs_.RemoveFile(JoinPath(tmp_.path(), "00000000000000000002")).ok());
  EXPECT_FALSE((*lister)->Unchanged());
  names = (*lister)->List();
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_TRUE(names->empty());
  EXPECT_TRUE((*lister)->Unchanged());
}

// A directory removed while a lister holds it open makes no event (the kernel sends its
// IN_DELETE_SELF once the last reference goes): the lister still tells it, and lists NOT_FOUND.
TEST_F(DirectoryChangeWatchTest, AListerOfARemovedDirectorySaysSoThoughNoEventCame) {
  const std::string sub = JoinPath(tmp_.path(), "sub");
  ASSERT_EQ(::mkdir(sub.c_str(), 0755), 0);
  auto lister = fs_.OpenDirectoryLister(sub);
  ASSERT_TRUE(lister.ok()) << lister.status();
  ASSERT_TRUE((*lister)->List().ok());
  ASSERT_TRUE((*lister)->Unchanged());
  ASSERT_EQ(::rmdir(sub.c_str()), 0);
  EXPECT_FALSE((*lister)->Unchanged());
  EXPECT_TRUE(absl::IsNotFound((*lister)->List().status())) << (*lister)->List().status();
}

}  // namespace
}  // namespace kf::fs
