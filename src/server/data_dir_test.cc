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

TEST_F(DataDirTest, CreatesLayoutThenReopens) {
  const std::string root = base_ + "/data";
  {
    auto dir = DataDir::Open(root, 1, id_);
    ASSERT_TRUE(dir.ok()) << dir.status();
    EXPECT_TRUE(std::filesystem::exists(root + "/KINGFISHER"));
    EXPECT_TRUE(std::filesystem::is_directory(root + "/wal"));
    EXPECT_TRUE(std::filesystem::is_directory(root + "/nodes/1"));
    EXPECT_EQ((*dir)->meta_dir(), root + "/meta");
  }
  auto again = DataDir::Open(root, 1, id_);
  EXPECT_TRUE(again.ok()) << again.status();
}

TEST_F(DataDirTest, RefusesAnOlderFormat) {
  for (int format : {1, 2}) {
    std::ofstream(base_ + "/KINGFISHER")
        << "kingfisher-data-dir " << format << "\ncluster=kf\npchannels=4\n";
    auto dir = DataDir::Open(base_, 1, id_);
    ASSERT_FALSE(dir.ok()) << format;
    EXPECT_NE(dir.status().message().find("incompatible Kingfisher version"), std::string::npos)
        << dir.status();
  }
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
