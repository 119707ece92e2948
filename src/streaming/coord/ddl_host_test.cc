#include "streaming/coord/ddl_host.h"

#include <gtest/gtest.h>

#include <thread>

#include "absl/strings/match.h"
#include "common/errors.h"
#include "streaming/ddl/testing/ddl_test_util.h"

namespace kf::streaming {
namespace {

const std::vector<std::string> kPChannels = {"kf-dml_0", "kf-dml_1"};

// Forwards to a base store; reads of the broadcast tasks (what Recover starts with) are
// counted and, while the gate is closed, held until it opens.
class GatedStore final : public meta::MetaStore {
 public:
  GatedStore(meta::MetaStore* base, std::string gated_prefix)
      : base_(base), prefix_(std::move(gated_prefix)) {}

  void SetOpen(bool open) {
    absl::MutexLock l(&mu_);
    open_ = open;
  }
  // Waits until `n` gated reads were made (and, while closed, are being held).
  bool WaitReads(int n, absl::Time deadline) const {
    absl::MutexLock l(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return reads_ >= n; };
    return mu_.AwaitWithDeadline(absl::Condition(&reached), deadline);
  }

  absl::StatusOr<meta::RangeResult> Range(std::string_view prefix, absl::Time deadline,
                                          int64_t limit = 0) override {
    if (prefix == prefix_) {
      absl::MutexLock l(&mu_);
      ++reads_;
      mu_.Await(absl::Condition(&open_));
    }
    return base_->Range(prefix, deadline, limit);
  }
  absl::StatusOr<meta::GetResult> Get(std::string_view key, absl::Time deadline) override {
    return base_->Get(key, deadline);
  }
  absl::StatusOr<int64_t> Put(std::string_view key, std::string_view value, absl::Time deadline,
                              meta::LeaseId lease = meta::kNoLease) override {
    return base_->Put(key, value, deadline, lease);
  }
  absl::StatusOr<meta::DeleteResult> Delete(std::string_view key, absl::Time deadline) override {
    return base_->Delete(key, deadline);
  }
  absl::StatusOr<meta::DeleteResult> DeletePrefix(std::string_view prefix,
                                                  absl::Time deadline) override {
    return base_->DeletePrefix(prefix, deadline);
  }
  absl::StatusOr<meta::TxnResult> Txn(const std::vector<meta::Compare>& compares,
                                      const std::vector<meta::Op>& then_ops,
                                      const std::vector<meta::Op>& else_ops,
                                      absl::Time deadline) override {
    return base_->Txn(compares, then_ops, else_ops, deadline);
  }
  absl::StatusOr<meta::LeaseGrant> GrantLease(absl::Duration ttl, absl::Time deadline) override {
    return base_->GrantLease(ttl, deadline);
  }
  absl::StatusOr<absl::Duration> KeepAliveOnce(meta::LeaseId lease, absl::Time deadline) override {
    return base_->KeepAliveOnce(lease, deadline);
  }
  absl::Status RevokeLease(meta::LeaseId lease, absl::Time deadline) override {
    return base_->RevokeLease(lease, deadline);
  }
  absl::StatusOr<std::unique_ptr<meta::WatchHandle>> Watch(std::string_view prefix,
                                                           int64_t start_revision,
                                                           meta::WatchCallback callback,
                                                           absl::Time deadline) override {
    return base_->Watch(prefix, start_revision, std::move(callback), deadline);
  }
  absl::Status Compact(int64_t revision, absl::Time deadline) override {
    return base_->Compact(revision, deadline);
  }

 private:
  meta::MetaStore* const base_;
  const std::string prefix_;
  mutable absl::Mutex mu_;
  bool open_ ABSL_GUARDED_BY(mu_) = true;
  int reads_ ABSL_GUARDED_BY(mu_) = 0;
};

class DdlHostTest : public ddl::testing::DdlTest {
 protected:
  void SetUp() override {
    DdlTest::SetUp();
    gated_ = std::make_unique<GatedStore>(faulty_.get(), keys_.broadcast_tasks_prefix());
    DdlHost::Options o;
    o.cluster = "kf";
    o.pchannels = kPChannels;
    o.broadcaster.retry_backoff = absl::Milliseconds(1);
    o.broadcaster.retry_backoff_max = absl::Milliseconds(5);
    o.retry_backoff = absl::Milliseconds(1);
    o.retry_backoff_max = absl::Milliseconds(5);
    host_ = std::make_unique<DdlHost>(gated_.get(), &appender_, o);
  }
  void TearDown() override {
    gated_->SetOpen(true);
    host_.reset();
    gated_.reset();
    DdlTest::TearDown();
  }

  static ddl::Catalog::CollectionSpec Spec(const std::string& name) {
    return {.name = name, .dim = 4, .metric = kingfisher::v1::L2, .shards = 2};
  }
  static ddl::Catalog::Call Call(bool blocking = true) {
    return {.blocking = blocking, .deadline = Deadline()};
  }
  // The status of catalog(), and its message.
  std::pair<absl::StatusCode, std::string> Refusal() const {
    auto c = host_->catalog();
    return {c.status().code(), std::string(c.status().message())};
  }

  ddl::testing::FakeAppender appender_;
  std::unique_ptr<GatedStore> gated_;
  std::unique_ptr<DdlHost> host_;
};

TEST_F(DdlHostTest, ServesOnlyWhileInOfficeAndAfterRecover) {
  EXPECT_EQ(Refusal(), std::make_pair(absl::StatusCode::kUnavailable,
                                      std::string("not the acting coordinator")));

  gated_->SetOpen(false);
  host_->TakeOffice(revision_);
  ASSERT_TRUE(gated_->WaitReads(1, Deadline()));  // Recover is under way, held
  EXPECT_EQ(Refusal(),
            std::make_pair(absl::StatusCode::kUnavailable, std::string("recovering DDL tasks")));
  gated_->SetOpen(true);
  ASSERT_TRUE(host_->WaitServing(Deadline()));
  auto catalog = host_->catalog();
  ASSERT_TRUE(catalog.ok()) << catalog.status();
  auto created = (*catalog)->CreateCollection(Spec("c"), Call());
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->state(), kingfisher::v1::COLLECTION_CREATED);

  host_->LeaveOffice();
  EXPECT_EQ(Refusal(), std::make_pair(absl::StatusCode::kUnavailable,
                                      std::string("not the acting coordinator")));
  // The next term serves only once the previous one's broadcaster stopped: the catalog handed
  // out then is alive but refuses.
  host_->TakeOffice(revision_);
  ASSERT_TRUE(host_->WaitServing(Deadline()));
  auto late = (*catalog)->CreateCollection(Spec("d"), Call());
  EXPECT_EQ(late.status().code(), absl::StatusCode::kUnavailable) << late.status();
  auto current = host_->catalog();
  ASSERT_TRUE(current.ok());
  EXPECT_NE(current->get(), catalog->get());
  EXPECT_TRUE((*current)->CreateCollection(Spec("d"), Call()).ok());
}

TEST_F(DdlHostTest, RetriesRecoverUntilTheStoreAnswers) {
  faulty_->SetDown(true);
  host_->TakeOffice(revision_);
  ASSERT_TRUE(gated_->WaitReads(3, Deadline()));  // failed twice, tried again
  auto refused = host_->catalog();
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "recovering DDL tasks"))
      << refused.status();
  faulty_->SetDown(false);
  ASSERT_TRUE(host_->WaitServing(Deadline()));
  auto catalog = host_->catalog();
  ASSERT_TRUE(catalog.ok());
  EXPECT_TRUE((*catalog)->CreateCollection(Spec("c"), Call()).ok());
}

// The term ends while a CreateCollection's appends are in flight: the caller gets the
// broadcaster's UNAVAILABLE, and the next term (a new coordinator) finishes the DDL.
TEST_F(DdlHostTest, ANewTermFinishesTheDdlThePreviousTermLeftUnfinished) {
  host_->TakeOffice(revision_);
  ASSERT_TRUE(host_->WaitServing(Deadline()));
  appender_.Hold(true);  // applied on the nodes, the acks do not come back
  absl::StatusOr<kingfisher::v1::CollectionInfo> first = absl::UnknownError("unset");
  std::thread caller([&] {
    auto catalog = host_->catalog();
    ASSERT_TRUE(catalog.ok());
    first = (*catalog)->CreateCollection(Spec("c"), Call());
  });
  ASSERT_TRUE(appender_.WaitCalls(2, Deadline()));
  host_->LeaveOffice();
  caller.join();
  EXPECT_EQ(first.status().code(), absl::StatusCode::kUnavailable) << first.status();
  appender_.Hold(false);  // the lost acks reach nobody

  host_->TakeOffice(TakeOffice());  // a new coordinator: the old revision is deposed
  ASSERT_TRUE(host_->WaitServing(Deadline()));
  auto catalog = host_->catalog();
  ASSERT_TRUE(catalog.ok());
  // Waits for the recovered task's lock, so it sees the finished DDL.
  auto again = (*catalog)->CreateCollection(Spec("c"), Call());
  EXPECT_EQ(GetStreamingCode(again.status()), StreamingCode::kCollectionExists) << again.status();
  auto described = (*catalog)->DescribeCollection("default", "c", Deadline());
  ASSERT_TRUE(described.ok()) << described.status();
  EXPECT_EQ(described->state(), kingfisher::v1::COLLECTION_CREATED);
  for (const std::string& v : described->schema().vchannels()) {
    EXPECT_EQ(appender_.log(v).size(), 1u) << v;  // re-appended under the same `_ik`
  }
  EXPECT_EQ(appender_.calls().size(), 4u);
}

TEST_F(DdlHostTest, StopEndsTheTermForGood) {
  host_->TakeOffice(revision_);
  ASSERT_TRUE(host_->WaitServing(Deadline()));
  host_->Stop();
  EXPECT_EQ(host_->catalog().status().code(), absl::StatusCode::kUnavailable);
  host_->TakeOffice(revision_);
  EXPECT_EQ(Refusal(), std::make_pair(absl::StatusCode::kUnavailable,
                                      std::string("not the acting coordinator")));
}

}  // namespace
}  // namespace kf::streaming
