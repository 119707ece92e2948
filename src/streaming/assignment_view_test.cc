#include "streaming/assignment_view.h"

#include <filesystem>
#include <stop_token>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "storage/meta/embedded_meta_store.h"

namespace kf::streaming {
namespace {

using kingfisher::v1::NodeInfo;
using kingfisher::v1::PChannelAssignment;

class AssignmentViewTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("assignment_view_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto store = meta::EmbeddedMetaStore::Open(dir_.string(), {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }
  void TearDown() override {
    view_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void StartView() {
    auto view = AssignmentView::Start(store_.get(), keys_, {}, Deadline());
    ASSERT_TRUE(view.ok()) << view.status();
    view_ = *std::move(view);
  }
  static absl::Time Deadline() { return absl::Now() + absl::Seconds(10); }

  int64_t PutAssignment(const std::string& name, int64_t node, int64_t term) {
    PChannelAssignment a;
    a.set_pchannel(name);
    a.set_node(node);
    a.set_term(term);
    a.set_state(kingfisher::v1::PCHANNEL_ASSIGNED);
    auto rev = store_->Put(keys_.pchannel(name), a.SerializeAsString(), Deadline());
    EXPECT_TRUE(rev.ok()) << rev.status();
    return rev.value_or(0);
  }
  int64_t PutNode(int64_t id) {
    NodeInfo n;
    n.set_id(id);
    n.set_address("127.0.0.1:" + std::to_string(1000 + id));
    auto rev = store_->Put(keys_.node(id), n.SerializeAsString(), Deadline());
    EXPECT_TRUE(rev.ok()) << rev.status();
    return rev.value_or(0);
  }
  // The snapshot once it reflects `revision` (fails the test at the deadline).
  std::shared_ptr<const AssignmentSnapshot> At(int64_t revision) {
    const absl::Time deadline = Deadline();
    auto s = view_->Current();
    while (s->version < revision && absl::Now() < deadline)
      s = view_->WaitNewer(s->version, deadline);
    EXPECT_GE(s->version, revision);
    return s;
  }

  std::filesystem::path dir_;
  ClusterKeys keys_{"kf"};
  std::unique_ptr<meta::EmbeddedMetaStore> store_;
  std::unique_ptr<AssignmentView> view_;
};

TEST_F(AssignmentViewTest, ListsWhatIsThereThenFollowsChanges) {
  const int64_t r1 = PutAssignment("kf-dml_0", 1, 3);
  PutNode(1);
  StartView();
  auto s = view_->Current();
  ASSERT_EQ(s->pchannels.count("kf-dml_0"), 1u);
  EXPECT_EQ(s->pchannels.at("kf-dml_0").assignment.term(), 3);
  EXPECT_EQ(s->pchannels.at("kf-dml_0").mod_revision, r1);
  EXPECT_EQ(s->nodes.count(1), 1u);

  const int64_t r2 = PutAssignment("kf-dml_0", 2, 4);
  const int64_t r3 = PutNode(2);
  s = At(r3);
  EXPECT_EQ(s->pchannels.at("kf-dml_0").assignment.node(), 2);
  EXPECT_EQ(s->pchannels.at("kf-dml_0").mod_revision, r2);
  EXPECT_EQ(s->nodes.size(), 2u);

  auto deleted = store_->Delete(keys_.node(1), Deadline());
  ASSERT_TRUE(deleted.ok());
  s = At(deleted->revision);
  EXPECT_EQ(s->nodes.count(1), 0u);
  EXPECT_EQ(s->version, deleted->revision);
}

TEST_F(AssignmentViewTest, UntrackedKeysDoNotMoveTheVersion) {
  StartView();
  const int64_t v0 = view_->Current()->version;
  ASSERT_TRUE(store_->Put(keys_.tso(), "12345", Deadline()).ok());
  ASSERT_TRUE(store_->Put("kf/other-cluster/nodes/1", "x", Deadline()).ok());
  const int64_t r = PutNode(4);
  auto s = At(r);
  EXPECT_EQ(s->version, r);  // the version is the last tracked write's, whatever came between
  EXPECT_GT(r, v0 + 2);
}

TEST_F(AssignmentViewTest, CorruptValuesAreLeftOutAndNamed) {
  ASSERT_TRUE(store_->Put(keys_.pchannel("kf-dml_1"), "\xff garbage", Deadline()).ok());
  StartView();
  auto s = view_->Current();
  EXPECT_EQ(s->pchannels.count("kf-dml_1"), 0u);
  EXPECT_EQ(s->corrupt.count(keys_.pchannel("kf-dml_1")), 1u);

  s = At(PutAssignment("kf-dml_1", 1, 1));
  EXPECT_EQ(s->pchannels.count("kf-dml_1"), 1u);
  EXPECT_TRUE(s->corrupt.empty());
}

TEST_F(AssignmentViewTest, ProtoIsSortedAndVersioned) {
  PutAssignment("kf-dml_1", 2, 1);
  PutAssignment("kf-dml_0", 1, 1);
  PutNode(2);
  PutNode(1);
  StartView();
  auto proto = view_->Current()->ToProto();
  ASSERT_EQ(proto.pchannels_size(), 2);
  EXPECT_EQ(proto.pchannels(0).pchannel(), "kf-dml_0");
  ASSERT_EQ(proto.nodes_size(), 2);
  EXPECT_EQ(proto.nodes(0).id(), 1);
  EXPECT_EQ(proto.version(), view_->Current()->version);
}

TEST_F(AssignmentViewTest, WaitNewerReturnsAtTheDeadlineWithoutChange) {
  StartView();
  const int64_t v = view_->Current()->version;
  EXPECT_EQ(view_->WaitNewer(v, absl::Now() + absl::Milliseconds(20))->version, v);
}

TEST_F(AssignmentViewTest, WaitNewerReturnsWhenStopIsRequested) {
  StartView();
  const int64_t v = view_->Current()->version;
  std::stop_source already;
  already.request_stop();
  EXPECT_EQ(view_->WaitNewer(v, absl::InfiniteFuture(), already.get_token())->version, v);

  std::stop_source later;
  absl::Notification waiting_done;
  std::thread waiter([&] {
    view_->WaitNewer(v, absl::InfiniteFuture(), later.get_token());
    waiting_done.Notify();
  });
  later.request_stop();
  EXPECT_TRUE(waiting_done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  waiter.join();
}

}  // namespace
}  // namespace kf::streaming
