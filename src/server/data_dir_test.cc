#include "server/data_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kf::server {
namespace {

class DataDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/kf_data_dir_test_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    base_ = tmpl;
  }
  void TearDown() override {
    std::filesystem::permissions(base_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add);
    std::filesystem::remove_all(base_);
  }
  std::string base_;
  const DataDir::Identity id_{"kf", 4};
};

TEST_F(DataDirTest, CreatesLayoutAndBumpsTerm) {
  const std::string root = base_ + "/data";
  {
    auto dir = DataDir::Open(root, 1, id_);
    ASSERT_TRUE(dir.ok()) << dir.status();
    EXPECT_TRUE(std::filesystem::exists(root + "/KINGFISHER"));
    EXPECT_TRUE(std::filesystem::is_directory(root + "/wal"));
    EXPECT_TRUE(std::filesystem::is_directory(root + "/nodes/1"));
    auto t1 = (*dir)->NextTerm();
    ASSERT_TRUE(t1.ok());
    EXPECT_EQ(t1->value(), 1);
    auto t2 = (*dir)->NextTerm();
    ASSERT_TRUE(t2.ok());
    EXPECT_EQ(t2->value(), 2);
  }
  auto again = DataDir::Open(root, 1, id_);
  ASSERT_TRUE(again.ok()) << again.status();
  auto t3 = (*again)->NextTerm();
  ASSERT_TRUE(t3.ok());
  EXPECT_EQ(t3->value(), 3);
}

TEST_F(DataDirTest, EmptyExistingDirIsAdopted) { EXPECT_TRUE(DataDir::Open(base_, 1, id_).ok()); }

TEST_F(DataDirTest, RefusesForeignNonEmptyDir) {
  std::ofstream(base_ + "/someone-elses-file") << "x";
  auto dir = DataDir::Open(base_, 1, id_);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("not a Kingfisher data dir"), std::string::npos)
      << dir.status();
}

TEST_F(DataDirTest, RefusesOtherIdentity) {
  ASSERT_TRUE(DataDir::Open(base_, 1, id_).ok());
  auto dir = DataDir::Open(base_, 1, DataDir::Identity{"kf", 8});
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("pchannels=8"), std::string::npos) << dir.status();
}

TEST_F(DataDirTest, RefusesSecondOpenWhileLocked) {
  auto first = DataDir::Open(base_, 1, id_);
  ASSERT_TRUE(first.ok());
  auto second = DataDir::Open(base_, 1, id_);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("in use"), std::string::npos) << second.status();
}

TEST_F(DataDirTest, RefusesUncreatableDir) {
  std::ofstream(base_ + "/file") << "x";
  auto dir = DataDir::Open(base_ + "/file/data", 1, id_);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("cannot create data dir"), std::string::npos)
      << dir.status();
}

TEST_F(DataDirTest, RefusesReadOnlyDir) {
  if (geteuid() == 0) GTEST_SKIP() << "root ignores permission bits";
  ASSERT_EQ(chmod(base_.c_str(), 0555), 0);
  auto dir = DataDir::Open(base_, 1, id_);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("not writable"), std::string::npos) << dir.status();
}

}  // namespace
}  // namespace kf::server
