// The S3 store against a real RGW when the server goes away: calls fail within their deadline
// with UNAVAILABLE or DEADLINE_EXCEEDED, and work again once radosgw is back.
#include "storage/object/s3_object_store.h"

#include <thread>

#include "gtest/gtest.h"
#include "storage/object/testing/rgw_process.h"
#include "storage/object/testing/store_under_test.h"

namespace kf::object {
namespace {

class S3ObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why_not;
    rgw_ = testing::SharedRgw(&why_not);
    if (rgw_ == nullptr && why_not.rfind("SKIP:", 0) == 0) GTEST_SKIP() << why_not.substr(5);
    ASSERT_NE(rgw_, nullptr) << why_not;
    auto store = S3ObjectStore::Create(rgw_->s3_options());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override {
    if (rgw_ != nullptr) {
      // Leave radosgw running for the next test, whatever happened here.
      absl::Status s = rgw_->StartRgw();
      if (!s.ok() && !absl::IsFailedPrecondition(s)) ADD_FAILURE() << s;
    }
  }
  static absl::Time Deadline() { return absl::Now() + absl::Seconds(30); }

  testing::RgwProcess* rgw_ = nullptr;
  std::unique_ptr<S3ObjectStore> store_;
};

TEST_F(S3ObjectStoreTest, StoppedRgwFailsWithinTheDeadlineAndRecovers) {
  ASSERT_TRUE(store_->Put("restart/before", "v1", {}, Deadline()).ok());
  rgw_->StopRgw();

  const absl::Duration budget = absl::Seconds(2);
  const absl::Time deadline = absl::Now() + budget;
  auto put = store_->Put("restart/during", "v2", {}, deadline);
  EXPECT_TRUE(absl::IsUnavailable(put.status()) || absl::IsDeadlineExceeded(put.status()))
      << put.status();
  // Within the deadline, plus the slack of one connect attempt's bookkeeping.
  EXPECT_LE(absl::Now(), deadline + absl::Milliseconds(500));
  auto get = store_->Get("restart/before", ByteRange::All(), absl::Now() + budget);
  EXPECT_TRUE(absl::IsUnavailable(get.status()) || absl::IsDeadlineExceeded(get.status()))
      << get.status();
  auto list = store_->List("restart/", "", 10, absl::Now() + budget);
  EXPECT_TRUE(absl::IsUnavailable(list.status()) || absl::IsDeadlineExceeded(list.status()))
      << list.status();

  ASSERT_TRUE(rgw_->StartRgw().ok());
  auto got = store_->Get("restart/before", ByteRange::All(), Deadline());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "v1");
  EXPECT_TRUE(store_->Put("restart/after", "v3", {}, Deadline()).ok());
}

TEST_F(S3ObjectStoreTest, RetriesUntilRgwComesBack) {
  rgw_->StopRgw();
  absl::StatusOr<std::string> put;
  std::thread writer([&] { put = store_->Put("restart/retried", "v", {}, Deadline()); });
  // radosgw comes back only once the Put has failed and is retrying.
  const absl::Time wait_until = Deadline();
  while (store_->retries() == 0 && absl::Now() < wait_until) std::this_thread::yield();
  EXPECT_GT(store_->retries(), 0u);
  const absl::Status started = rgw_->StartRgw();
  writer.join();
  ASSERT_TRUE(started.ok()) << started;
  ASSERT_TRUE(put.ok()) << put.status();
  EXPECT_EQ(*store_->Get("restart/retried", ByteRange::All(), Deadline()), "v");
}

TEST_F(S3ObjectStoreTest, WrongSecretIsPermissionDenied) {
  S3Options options = rgw_->s3_options();
  options.secret_key = "wrong";
  auto store = S3ObjectStore::Create(options);
  ASSERT_TRUE(store.ok());
  auto put = (*store)->Put("auth/x", "v", {}, Deadline());
  EXPECT_TRUE(absl::IsPermissionDenied(put.status())) << put.status();
}

}  // namespace
}  // namespace kf::object
