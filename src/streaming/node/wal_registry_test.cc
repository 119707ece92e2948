#include "streaming/node/wal_registry.h"

#include <filesystem>

#include "common/errors.h"
#include "gtest/gtest.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/testing/memory_backend.h"

namespace kf::streaming::node {
namespace {

class WalRegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kf-wal-registry-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    tso_ = *TimestampAllocator::Open((dir_ / "tso").string(), {});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::shared_ptr<wal::Wal> OpenAt(const std::string& pchannel, int64_t term) {
    wal::WalOptions o;
    o.pchannel = pchannel;
    o.tso = tso_.get();
    auto w = wal::OpenWal(std::move(o),
                          std::make_unique<wal::testing::MemoryWalBackend>(pchannel, Term(term)));
    EXPECT_TRUE(w.ok()) << w.status();
    return std::shared_ptr<wal::Wal>(*std::move(w));
  }

  std::filesystem::path dir_;
  std::unique_ptr<TimestampAllocator> tso_;
};

TEST_F(WalRegistryTest, DynamicRegistryTellsMissingFromForeign) {
  DynamicWalRegistry registry({"kf-dml_1", "kf-dml_0"});
  EXPECT_EQ(GetStreamingCode(registry.Get("kf-dml_0").status()), StreamingCode::kChannelNotExist);
  EXPECT_EQ(registry.Get("other-dml_0").status().code(), absl::StatusCode::kInvalidArgument);

  auto w = OpenAt("kf-dml_0", 3);
  EXPECT_EQ(registry.Put(w), nullptr);
  ASSERT_TRUE(registry.Get("kf-dml_0").ok());
  auto list = registry.List();
  ASSERT_EQ(list.size(), 1u);
  EXPECT_EQ(list[0].term, Term(3));

  auto newer = OpenAt("kf-dml_0", 4);
  EXPECT_EQ(registry.Put(newer), w);  // the replaced one comes back for closing
  EXPECT_EQ(registry.Remove("kf-dml_0"), newer);
  EXPECT_EQ(registry.Remove("kf-dml_0"), nullptr);
  EXPECT_EQ(GetStreamingCode(registry.Get("kf-dml_0").status()), StreamingCode::kChannelNotExist);
  w->Close();
  newer->Close();
}

TEST_F(WalRegistryTest, StaleTermIsUnmatched) {
  DynamicWalRegistry registry({"kf-dml_0"});
  auto w = OpenAt("kf-dml_0", 5);
  registry.Put(w);
  EXPECT_TRUE(GetAtTerm(registry, "kf-dml_0", 0).ok());  // unchecked
  EXPECT_TRUE(GetAtTerm(registry, "kf-dml_0", 5).ok());
  absl::Status stale = GetAtTerm(registry, "kf-dml_0", 4).status();
  EXPECT_EQ(GetStreamingCode(stale), StreamingCode::kUnmatchedChannelTerm);
  EXPECT_EQ(stale.code(), absl::StatusCode::kAborted);
  EXPECT_NE(stale.message().find("term 5"), std::string::npos) << stale;
  w->Close();
}

}  // namespace
}  // namespace kf::streaming::node
