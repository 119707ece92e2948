// The objectstore backend on a real Ceph RGW (S3), and radosgw stopped and restarted mid-run:
// appends wait (their uploads retry) or fail clearly once the upload timeout passes, never
// acknowledge what was not stored, and every acknowledged entry is read back exactly once by
// the next owner.
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/object/s3_object_store.h"
#include "storage/object/testing/rgw_process.h"
#include "storage/object/testing/store_under_test.h"
#include "wal/backends/objectstore/object_opener.h"
#include "wal/backends/objectstore/test_util.h"

namespace kf::wal::objectstore {
namespace {

using testing::ReadAll;
using testing::Writer;

// Appends from one thread with up to `in_flight` outstanding until Stop; records every outcome.
class Load {
 public:
  Load(WalBackend* b, std::string tag, int in_flight) : b_(b), tag_(std::move(tag)) {
    thread_ = std::thread([this, in_flight] { Run(in_flight); });
  }
  ~Load() { Stop(); }

  void Stop() {
    {
      absl::MutexLock l(&mu_);
      stop_ = true;
    }
    if (thread_.joinable()) thread_.join();
    absl::MutexLock l(&mu_);
    auto drained = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return outstanding_ == 0; };
    mu_.Await(absl::Condition(&drained));
  }
  bool WaitAcked(size_t n, absl::Duration timeout) {
    absl::MutexLock l(&mu_);
    auto enough = [&]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return acked_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), timeout);
  }
  std::vector<std::string> acked() {
    absl::MutexLock l(&mu_);
    return acked_;
  }
  std::vector<absl::Status> failures() {
    absl::MutexLock l(&mu_);
    return failures_;
  }

 private:
  void Run(int in_flight) {
    for (int i = 0;; ++i) {
      absl::MutexLock l(&mu_);
      auto room = [&]()
                      ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_ || outstanding_ < in_flight; };
      mu_.Await(absl::Condition(&room));
      if (stop_) return;
      std::string data = absl::StrCat(tag_, "-", i);
      auto id = b_->Append(data, [this, data](absl::Status s) {
        absl::MutexLock l(&mu_);
        --outstanding_;
        if (s.ok()) {
          acked_.push_back(data);
        } else {
          failures_.push_back(s);
        }
      });
      if (!id.ok()) {
        failures_.push_back(id.status());
        return;  // the backend refuses appends from here on
      }
      ++outstanding_;
    }
  }

  WalBackend* const b_;
  const std::string tag_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  int outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::string> acked_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Status> failures_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

class RgwBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why_not;
    rgw_ = object::testing::SharedRgw(&why_not);
    if (rgw_ == nullptr && why_not.rfind("SKIP:", 0) == 0) GTEST_SKIP() << why_not.substr(5);
    ASSERT_NE(rgw_, nullptr) << why_not;
    auto store = object::S3ObjectStore::Create(rgw_->s3_options());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    auto meta = meta::EmbeddedMetaStore::Open(meta_dir_.path(), {});
    ASSERT_TRUE(meta.ok()) << meta.status();
    meta_ = *std::move(meta);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    options_.store = store_.get();
    options_.meta = meta_.get();
    options_.root = absl::StrCat("rgwtest-", ::getpid(), "-", info->name());
    options_.request_timeout = absl::Seconds(2);
  }
  void TearDown() override {
    if (rgw_ != nullptr) {
      absl::Status s = rgw_->StartRgw();  // leave radosgw running for the next test
      if (!s.ok() && !absl::IsFailedPrecondition(s)) ADD_FAILURE() << s;
    }
  }

  // Every acknowledged entry is in the next owner's log exactly once; nothing else is there
  // but entries whose append failed (ambiguous).
  void ExpectEveryAckOnce(const std::vector<std::string>& acked, size_t ambiguous, Term term) {
    auto next = NewObjectOpener(options_)->Open(Writer("rgw", term.value()));
    ASSERT_TRUE(next.ok()) << next.status();
    auto all = ReadAll(next->get(), absl::Seconds(2));
    ASSERT_TRUE(all.ok()) << all.status();
    std::map<std::string, int> seen;
    for (const auto& e : *all) ++seen[e.data];
    for (const auto& a : acked) EXPECT_EQ(seen[a], 1) << a;
    EXPECT_LE(all->size(), acked.size() + ambiguous);
  }

  object::testing::RgwProcess* rgw_ = nullptr;
  std::unique_ptr<object::S3ObjectStore> store_;
  kf::testing::TempDir meta_dir_{"rgwmeta"};
  std::unique_ptr<meta::EmbeddedMetaStore> meta_;
  ObjectOpenerOptions options_;
};

TEST_F(RgwBackendTest, AppendsWaitWhileRgwIsDownAndEveryAckSurvives) {
  auto b = NewObjectOpener(options_)->Open(Writer("rgw", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  Load load(b->get(), "a", 8);
  ASSERT_TRUE(load.WaitAcked(50, absl::Seconds(30)));
  rgw_->StopRgw();
  // Uploads now fail and are retried; radosgw comes back while they wait.
  const uint64_t retries = store_->retries();
  for (absl::Time give_up = absl::Now() + absl::Seconds(30); store_->retries() == retries;) {
    ASSERT_LT(absl::Now(), give_up);
    std::this_thread::yield();
  }
  const size_t acked_while_down = load.acked().size();
  ASSERT_TRUE(rgw_->StartRgw().ok());
  ASSERT_TRUE(load.WaitAcked(acked_while_down + 50, absl::Seconds(60)));
  load.Stop();
  EXPECT_TRUE(load.failures().empty()) << load.failures().front();
  ASSERT_TRUE((*b)->Close().ok());
  ExpectEveryAckOnce(load.acked(), 0, Term(2));
}

TEST_F(RgwBackendTest, AnOutageLongerThanTheUploadTimeoutFailsAppendsClearly) {
  options_.upload_timeout = absl::Seconds(3);
  auto b = NewObjectOpener(options_)->Open(Writer("rgw", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  Load load(b->get(), "b", 8);
  ASSERT_TRUE(load.WaitAcked(20, absl::Seconds(30)));
  rgw_->StopRgw();
  load.Stop();  // every outstanding append ends: stored and acked, or failed
  const auto failures = load.failures();
  ASSERT_FALSE(failures.empty());
  for (const auto& f : failures) {
    EXPECT_TRUE(absl::IsUnavailable(f) || absl::IsDeadlineExceeded(f) ||
                absl::IsFailedPrecondition(f))
        << f;
  }
  auto refused = (*b)->Append("after", [](absl::Status) {});
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  ASSERT_TRUE(rgw_->StartRgw().ok());
  ExpectEveryAckOnce(load.acked(), failures.size(), Term(2));
}

}  // namespace
}  // namespace kf::wal::objectstore
