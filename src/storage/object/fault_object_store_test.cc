// FaultObjectStore: each injected fault surfaces as the code the real stores use for it.
#include "storage/object/fault_object_store.h"

#include <stdlib.h>

#include <filesystem>

#include "gtest/gtest.h"
#include "storage/fs/file_system.h"
#include "storage/object/local_object_store.h"

namespace kf::object {
namespace {

using Op = FaultObjectStore::Op;

class FaultObjectStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/fault_object_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    auto base = LocalObjectStore::Open(fs::DefaultFileSystem(), dir_);
    ASSERT_TRUE(base.ok()) << base.status();
    base_ = *std::move(base);
    store_ = std::make_unique<FaultObjectStore>(base_.get());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static absl::Time Deadline() { return absl::Now() + absl::Seconds(10); }

  std::string dir_;
  std::unique_ptr<LocalObjectStore> base_;
  std::unique_ptr<FaultObjectStore> store_;
};

TEST_F(FaultObjectStoreTest, FailNextReturnsTheErrorOnceAndSkipsTheBase) {
  store_->FailNext(Op::kPut, absl::UnavailableError("503 SlowDown"));
  EXPECT_TRUE(absl::IsUnavailable(store_->Put("k", "v", {}, Deadline()).status()));
  EXPECT_TRUE(absl::IsNotFound(base_->Head("k", Deadline()).status())) << "never applied";
  EXPECT_TRUE(store_->Put("k", "v", {}, Deadline()).ok()) << "one fault, one call";
  EXPECT_EQ(store_->calls(Op::kPut), 2u);

  store_->FailNext(Op::kGet, absl::DataLossError("bad etag"), 2);
  EXPECT_TRUE(absl::IsDataLoss(store_->Get("k", ByteRange::All(), Deadline()).status()));
  EXPECT_TRUE(absl::IsDataLoss(store_->Get("k", ByteRange::All(), Deadline()).status()));
  EXPECT_TRUE(store_->Get("k", ByteRange::All(), Deadline()).ok());

  store_->FailNext(Op::kHead, absl::UnavailableError("reset"));
  store_->FailNext(Op::kList, absl::UnavailableError("reset"));
  store_->FailNext(Op::kDelete, absl::UnavailableError("reset"));
  EXPECT_TRUE(absl::IsUnavailable(store_->Head("k", Deadline()).status()));
  EXPECT_TRUE(absl::IsUnavailable(store_->List("", "", 10, Deadline()).status()));
  EXPECT_TRUE(absl::IsUnavailable(store_->Delete("k", Deadline())));
  EXPECT_TRUE(base_->Head("k", Deadline()).ok()) << "the failed delete did not happen";
}

TEST_F(FaultObjectStoreTest, TimeoutWaitsForTheDeadline) {
  store_->TimeoutNext(Op::kGet);
  const absl::Time deadline = absl::Now() + absl::Milliseconds(50);
  EXPECT_TRUE(absl::IsDeadlineExceeded(store_->Get("k", ByteRange::All(), deadline).status()));
  EXPECT_GE(absl::Now(), deadline) << "a timeout answers no earlier than the deadline";
}

TEST_F(FaultObjectStoreTest, LostPutAnswerWasApplied) {
  store_->LoseNextPutAnswer();
  auto put = store_->Put("fence", "term-7", {.if_absent = true}, Deadline());
  EXPECT_TRUE(absl::IsUnavailable(put.status()));
  EXPECT_EQ(*base_->Get("fence", ByteRange::All(), Deadline()), "term-7");
  // The caller's blind retry of the create now sees its own object as someone else's.
  EXPECT_TRUE(absl::IsAlreadyExists(
      store_->Put("fence", "term-7", {.if_absent = true}, Deadline()).status()));
}

TEST_F(FaultObjectStoreTest, SlowPutPastTheDeadlineIsNotApplied) {
  store_->SetPutDelay(absl::Seconds(30));
  const absl::Time deadline = absl::Now() + absl::Milliseconds(50);
  EXPECT_TRUE(absl::IsDeadlineExceeded(store_->Put("slow", "v", {}, deadline).status()));
  EXPECT_TRUE(absl::IsNotFound(base_->Head("slow", Deadline()).status()));
  store_->SetPutDelay(absl::Milliseconds(1));
  EXPECT_TRUE(store_->Put("slow", "v", {}, Deadline()).ok());
}

TEST_F(FaultObjectStoreTest, ArmingAnOkStatusIsReportedNotReturned) {
  store_->FailNext(Op::kHead, absl::OkStatus());
  EXPECT_TRUE(absl::IsInternal(store_->Head("k", Deadline()).status()));
}

}  // namespace
}  // namespace kf::object
