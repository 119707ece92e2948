#include "storage/object/object_store_url.h"

#include <string>

#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"

namespace kf::object {
namespace {

TEST(ObjectStoreUrlTest, FileUrlsOpenALocalStore) {
  kf::testing::TempDir tmp("url_store");
  const std::string dir = tmp.path() + "/store";  // created by the store
  auto store = OpenObjectStoreUrl("file://" + dir, absl::InfiniteFuture());
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Put("a/b", "x", {}, absl::InfiniteFuture()).ok());
  EXPECT_EQ(*(*store)->Get("a/b", ByteRange::All(), absl::InfiniteFuture()), "x");
}

TEST(ObjectStoreUrlTest, BadUrlsAreRefusedWithTheExpectedForms) {
  for (const char* url : {"", "ftp://x/y", "file://relative", "s3://host:1", "s3://host:1/",
                          "s3://nocolon@host:1/bucket", "s3:///bucket"}) {
    auto store = OpenObjectStoreUrl(url, absl::InfiniteFuture());
    EXPECT_TRUE(absl::IsInvalidArgument(store.status())) << url << ": " << store.status();
    EXPECT_NE(store.status().message().find("s3://"), absl::string_view::npos);
  }
  // Credentials never appear in the message.
  auto store = OpenObjectStoreUrl("s3://AK:SECRETKEY@host:1", absl::InfiniteFuture());
  EXPECT_EQ(store.status().message().find("SECRETKEY"), absl::string_view::npos);
}

}  // namespace
}  // namespace kf::object
