#include "streaming/coord/coordinator.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>

#include "gtest/gtest.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/meta/testing/fault_meta_store.h"

namespace kf::streaming {
namespace {

using kingfisher::v1::NodeInfo;
using kingfisher::v1::PCHANNEL_ASSIGNING;
using kingfisher::v1::PCHANNEL_UNAVAILABLE;

constexpr absl::Duration kWait = absl::Seconds(20);  // generous: only failures wait this long

class CoordinatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("coordinator_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    auto store = meta::EmbeddedMetaStore::Open(dir_.string(), {});
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    faulty_ = std::make_unique<meta::testing::FaultMetaStore>(store_.get());
    auto view = AssignmentView::Start(store_.get(), keys_, {}, Deadline());
    ASSERT_TRUE(view.ok()) << view.status();
    view_ = *std::move(view);
  }
  void TearDown() override {
    coords_.clear();
    view_.reset();
    faulty_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  static absl::Time Deadline() { return absl::Now() + kWait; }

  Coordinator::Options CoordOptions() {
    Coordinator::Options o;
    o.cluster = "kf";
    o.pchannels = {"kf-dml_0", "kf-dml_1", "kf-dml_2", "kf-dml_3"};
    o.lease_ttl = absl::Seconds(1);
    o.balance_interval = absl::Hours(1);
    o.retry_backoff = absl::Milliseconds(20);
    o.retry_backoff_max = absl::Milliseconds(200);
    o.call_timeout = absl::Seconds(2);
    return o;
  }
  // A started coordinator over the fault-injecting store (owned by the test).
  Coordinator* StartCoordinator(Coordinator::Options o, const std::string& address) {
    auto c = Coordinator::Create(faulty_.get(), std::move(o), Deadline());
    EXPECT_TRUE(c.ok()) << c.status();
    if (!c.ok()) return nullptr;
    (*c)->Start(address);
    coords_.push_back(*std::move(c));
    return coords_.back().get();
  }
  Coordinator* StartLeader(Coordinator::Options o) {
    Coordinator* c = StartCoordinator(std::move(o), "127.0.0.1:1");
    EXPECT_TRUE(c != nullptr && c->WaitActing(true, Deadline()));
    return c;
  }

  // A node as the streaming node registers it: nodes/<id> on its own lease.
  meta::LeaseId AddNode(int64_t id, kingfisher::v1::NodeState state = kingfisher::v1::NODE_ONLINE) {
    auto lease = store_->GrantLease(absl::Seconds(60), Deadline());
    EXPECT_TRUE(lease.ok()) << lease.status();
    SetNodeState(id, lease->id, state);
    leases_[id] = lease->id;
    return lease->id;
  }
  void SetNodeState(int64_t id, meta::LeaseId lease, kingfisher::v1::NodeState state) {
    NodeInfo n;
    n.set_id(id);
    n.set_address("127.0.0.1:" + std::to_string(20000 + id));
    n.set_state(state);
    auto rev = store_->Put(keys_.node(id), n.SerializeAsString(), Deadline(), lease);
    EXPECT_TRUE(rev.ok()) << rev.status();
  }
  void RemoveNode(int64_t id) { EXPECT_TRUE(store_->RevokeLease(leases_.at(id), Deadline()).ok()); }

  // The test's own view once `pred` holds (fails the test at the deadline).
  std::shared_ptr<const AssignmentSnapshot> WaitFor(
      const std::function<bool(const AssignmentSnapshot&)>& pred, const std::string& what) {
    const absl::Time deadline = Deadline();
    auto s = view_->Current();
    while (!pred(*s) && absl::Now() < deadline) s = view_->WaitNewer(s->version, deadline);
    EXPECT_TRUE(pred(*s)) << "timed out waiting for: " << what;
    return s;
  }
  // Waits until `c` completed a balancing round on everything the test's view has seen.
  void WaitBalanced(Coordinator* c) {
    ASSERT_TRUE(c->WaitBalanced(view_->Current()->version, Deadline()));
  }

  static std::map<int64_t, int> Load(const AssignmentSnapshot& s) {
    std::map<int64_t, int> load;
    for (const auto& [name, p] : s.pchannels) ++load[p.assignment.node()];
    return load;
  }
  static bool AllOn(const AssignmentSnapshot& s, const std::function<bool(int64_t node)>& ok) {
    if (s.pchannels.size() != 4) return false;
    for (const auto& [name, p] : s.pchannels) {
      if (!ok(p.assignment.node())) return false;
    }
    return true;
  }

  std::filesystem::path dir_;
  ClusterKeys keys_{"kf"};
  std::unique_ptr<meta::EmbeddedMetaStore> store_;
  std::unique_ptr<meta::testing::FaultMetaStore> faulty_;
  std::unique_ptr<AssignmentView> view_;
  std::vector<std::unique_ptr<Coordinator>> coords_;
  std::map<int64_t, meta::LeaseId> leases_;
};

TEST_F(CoordinatorTest, AssignsEveryPChannelEvenlyAtTermOne) {
  AddNode(1);
  AddNode(2);
  StartLeader(CoordOptions());
  auto s =
      WaitFor([](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n; }); },
              "every pchannel assigned");
  for (const auto& [name, p] : s->pchannels) {
    EXPECT_EQ(p.assignment.state(), PCHANNEL_ASSIGNING) << name;
    EXPECT_EQ(p.assignment.term(), 1) << name;
  }
  EXPECT_EQ(Load(*s), (std::map<int64_t, int>{{1, 2}, {2, 2}}));
  ASSERT_TRUE(s->coord.has_value());
  EXPECT_EQ(s->coord->address(), "127.0.0.1:1");
}

TEST_F(CoordinatorTest, PChannelsOfANodeWhoseLeaseIsGoneMoveAtTheNextTerm) {
  AddNode(1);
  AddNode(2);
  StartLeader(CoordOptions());
  auto before =
      WaitFor([](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n; }); },
              "every pchannel assigned");
  RemoveNode(2);
  auto after = WaitFor(
      [](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n == 1; }); },
      "every pchannel on node 1");
  for (const auto& [name, p] : before->pchannels) {
    const auto& now = after->pchannels.at(name).assignment;
    if (p.assignment.node() == 2) {
      EXPECT_EQ(now.term(), p.assignment.term() + 1) << name;
      EXPECT_EQ(now.state(), PCHANNEL_ASSIGNING) << name;
    } else {
      EXPECT_EQ(after->pchannels.at(name).mod_revision, p.mod_revision) << name << " moved";
    }
  }
}

TEST_F(CoordinatorTest, PChannelsOfADrainingNodeMove) {
  AddNode(1);
  const meta::LeaseId two = AddNode(2);
  StartLeader(CoordOptions());
  WaitFor([](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n; }); },
          "every pchannel assigned");
  SetNodeState(2, two, kingfisher::v1::NODE_DRAINING);
  auto s = WaitFor(
      [](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n == 1; }); },
      "every pchannel on node 1");
  for (const auto& [name, p] : s->pchannels) EXPECT_GE(p.assignment.term(), 1) << name;
}

TEST_F(CoordinatorTest, AJoiningNodeGetsOnePChannelPerBalanceRound) {
  AddNode(1);
  Coordinator* c = StartLeader(CoordOptions());  // balance interval: 1 h
  WaitFor([](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n == 1; }); },
          "every pchannel on node 1");
  AddNode(2);
  auto s = WaitFor([](const AssignmentSnapshot& s) { return Load(s)[2] == 1; },
                   "one pchannel on node 2");
  WaitBalanced(c);
  // Still unbalanced (3 / 1), but the next rebalancing move waits for the next round.
  EXPECT_EQ(Load(*view_->Current()), (std::map<int64_t, int>{{1, 3}, {2, 1}}));
  for (const auto& [name, p] : s->pchannels) {
    EXPECT_EQ(p.assignment.term(), p.assignment.node() == 2 ? 2 : 1) << name;
  }
}

TEST_F(CoordinatorTest, RebalancesOverSeveralRounds) {
  AddNode(1);
  Coordinator::Options o = CoordOptions();
  o.balance_interval = absl::Milliseconds(100);
  StartLeader(o);
  WaitFor([](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n == 1; }); },
          "every pchannel on node 1");
  AddNode(2);
  WaitFor(
      [](const AssignmentSnapshot& s) {
        return Load(s) == std::map<int64_t, int>{{1, 2}, {2, 2}};
      },
      "two pchannels on each node");
}

TEST_F(CoordinatorTest, UnavailableWithoutANodeThenAssignedAtTheNextTerm) {
  StartLeader(CoordOptions());
  auto s = WaitFor(
      [](const AssignmentSnapshot& s) {
        if (s.pchannels.size() != 4) return false;
        for (const auto& [name, p] : s.pchannels) {
          if (p.assignment.state() != PCHANNEL_UNAVAILABLE) return false;
        }
        return true;
      },
      "every pchannel UNAVAILABLE");
  for (const auto& [name, p] : s->pchannels) EXPECT_EQ(p.assignment.term(), 0) << name;

  AddNode(7);
  s = WaitFor(
      [](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n == 7; }); },
      "every pchannel on node 7");
  for (const auto& [name, p] : s->pchannels) EXPECT_EQ(p.assignment.term(), 1) << name;

  RemoveNode(7);
  s = WaitFor(
      [](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n == 0; }); },
      "every pchannel unowned");
  for (const auto& [name, p] : s->pchannels) {
    EXPECT_EQ(p.assignment.state(), PCHANNEL_UNAVAILABLE) << name;
    EXPECT_EQ(p.assignment.term(), 1) << name << ": UNAVAILABLE keeps the term";
  }
  AddNode(8);
  s = WaitFor(
      [](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n == 8; }); },
      "every pchannel on node 8");
  for (const auto& [name, p] : s->pchannels) EXPECT_EQ(p.assignment.term(), 2) << name;
}

TEST_F(CoordinatorTest, ASuccessorKeepsAssignmentsAndHandsOutLaterTimestamps) {
  AddNode(1);
  AddNode(2);
  Coordinator* first = StartLeader(CoordOptions());
  auto before =
      WaitFor([](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n; }); },
              "every pchannel assigned");
  auto t1 = first->oracle()->AllocateBatch(10, TimeTick(0));
  ASSERT_TRUE(t1.ok()) << t1.status();
  first->Stop();
  EXPECT_TRUE(absl::IsUnavailable(first->oracle()->Allocate().status()));

  Coordinator* second = StartLeader(CoordOptions());
  WaitBalanced(second);
  auto after = view_->Current();
  for (const auto& [name, p] : before->pchannels) {
    EXPECT_EQ(after->pchannels.at(name).assignment.term(), p.assignment.term()) << name;
    EXPECT_EQ(after->pchannels.at(name).mod_revision, p.mod_revision) << name << " rewritten";
  }
  auto t2 = second->oracle()->Allocate();
  ASSERT_TRUE(t2.ok()) << t2.status();
  EXPECT_GT(t2->value(), t1->value() + 9);
}

TEST_F(CoordinatorTest, TwoCoordinatorsOnOneStoreExactlyOneActs) {
  AddNode(1);
  Coordinator* a = StartCoordinator(CoordOptions(), "a:1");
  Coordinator* b = StartCoordinator(CoordOptions(), "b:1");
  auto s =
      WaitFor([](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n; }); },
              "every pchannel assigned");
  ASSERT_TRUE(s->coord.has_value());
  Coordinator* leader = s->coord->address() == "a:1" ? a : b;
  Coordinator* standby = leader == a ? b : a;
  ASSERT_TRUE(leader->WaitActing(true, Deadline()));
  EXPECT_FALSE(standby->acting());
  auto t1 = leader->oracle()->Allocate();
  ASSERT_TRUE(t1.ok());
  EXPECT_TRUE(absl::IsUnavailable(standby->oracle()->Allocate().status()));

  leader->Stop();
  ASSERT_TRUE(standby->WaitActing(true, Deadline()));
  auto t2 = standby->oracle()->Allocate();
  ASSERT_TRUE(t2.ok()) << t2.status();
  EXPECT_GT(*t2, *t1);
  // It acts: a node failure is handled by the new leader.
  AddNode(2);
  RemoveNode(1);
  WaitFor([](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n == 2; }); },
          "every pchannel on node 2");
}

TEST_F(CoordinatorTest, AnExclusiveCoordinatorRemovesALeftoverCoordKey) {
  AddNode(1);
  // What a crashed run leaves behind: its coord key on a lease that lives on for a while.
  auto stale = store_->GrantLease(absl::Seconds(600), Deadline());
  ASSERT_TRUE(stale.ok());
  kingfisher::v1::CoordinatorInfo info;
  info.set_address("crashed:1");
  ASSERT_TRUE(store_->Put(keys_.coord(), info.SerializeAsString(), Deadline(), stale->id).ok());

  Coordinator::Options o = CoordOptions();
  o.exclusive = true;
  Coordinator* c = StartLeader(o);  // well before the stale lease's 600 s
  EXPECT_TRUE(c->acting());
  WaitFor(
      [](const AssignmentSnapshot& s) { return s.coord && s.coord->address() == "127.0.0.1:1"; },
      "the new coordinator's key");
}

TEST_F(CoordinatorTest, ADeposedOracleIsReactivatedWhileTheCoordinatorStillLeads) {
  AddNode(1);
  Coordinator* c = StartLeader(CoordOptions());
  ASSERT_TRUE(c->oracle()->Allocate().ok());
  // Push the clock past the mark with a huge at_least; the raise "fails" after landing.
  faulty_->FailNextTxns(1, absl::UnavailableError("connection reset"), /*applied=*/true);
  const TimeTick ahead(c->oracle()->mark() + (uint64_t{1} << 30));
  EXPECT_TRUE(absl::IsUnavailable(c->oracle()->AllocateBatch(1, ahead).status()));
  // The next raise finds the key moved: deposed; the coordinator re-confirms and re-activates.
  EXPECT_FALSE(c->oracle()->AllocateBatch(1, ahead).ok());
  const absl::Time deadline = Deadline();
  absl::StatusOr<TimeTick> t = c->oracle()->Allocate();
  while (!t.ok() && absl::Now() < deadline) {
    // Polls the observable state; each round waits (briefly) for the coordinator to act.
    c->WaitActing(true, std::min(deadline, absl::Now() + absl::Milliseconds(10)));
    t = c->oracle()->Allocate();
  }
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_GT(t->value(), ahead.value());
}

TEST_F(CoordinatorTest, StopsActingWhileTheStoreIsDownAndRecovers) {
  AddNode(1);
  Coordinator* c = StartLeader(CoordOptions());
  auto before = WaitFor(
      [](const AssignmentSnapshot& s) { return AllOn(s, [](int64_t n) { return n == 1; }); },
      "every pchannel on node 1");
  faulty_->SetDown(true);
  ASSERT_TRUE(c->WaitActing(false, Deadline()));
  EXPECT_FALSE(c->oracle()->Allocate().ok());
  faulty_->SetDown(false);
  ASSERT_TRUE(c->WaitActing(true, Deadline()));
  EXPECT_TRUE(c->oracle()->Allocate().ok());
  WaitBalanced(c);
  for (const auto& [name, p] : before->pchannels) {
    EXPECT_EQ(view_->Current()->pchannels.at(name).assignment.term(), p.assignment.term());
  }
}

// The hooks the DDL host hangs on: one on_acting (with the fence of the term's writes) and one
// on_not_acting per acting term, also when acting stops for a store outage and resumes.
class CoordinatorHooksTest : public CoordinatorTest {
 protected:
  static constexpr int64_t kNotActing = -1;

  Coordinator::Options WithHooks() {
    Coordinator::Options o = CoordOptions();
    o.on_acting = [this](int64_t revision) {
      absl::MutexLock l(&mu_);
      events_.push_back(revision);
    };
    o.on_not_acting = [this] {
      absl::MutexLock l(&mu_);
      events_.push_back(kNotActing);
    };
    return o;
  }
  std::vector<int64_t> WaitEvents(size_t n) {
    absl::MutexLock l(&mu_);
    auto reached = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return events_.size() >= n; };
    EXPECT_TRUE(mu_.AwaitWithDeadline(absl::Condition(&reached), Deadline()));
    return events_;
  }

  absl::Mutex mu_;
  std::vector<int64_t> events_ ABSL_GUARDED_BY(mu_);
};

TEST_F(CoordinatorHooksTest, ReportEveryActingTermWithTheCoordKeysCreateRevision) {
  AddNode(1);
  Coordinator* c = StartLeader(WithHooks());
  auto first = WaitEvents(1);
  auto coord = store_->Get(keys_.coord(), Deadline());
  ASSERT_TRUE(coord.ok()) << coord.status();
  const int64_t revision = coord->kv.create_revision;
  EXPECT_EQ(first, std::vector<int64_t>{revision});

  // Unconfirmed lease: it stops acting; once the store is back it acts again, at the same
  // revision or, if the lease expired meanwhile, at the one of its new key.
  faulty_->SetDown(true);
  EXPECT_EQ(WaitEvents(2), (std::vector<int64_t>{revision, kNotActing}));
  faulty_->SetDown(false);
  auto third = WaitEvents(3);
  coord = store_->Get(keys_.coord(), Deadline());
  ASSERT_TRUE(coord.ok()) << coord.status();
  const int64_t again = coord->kv.create_revision;
  EXPECT_EQ(third, (std::vector<int64_t>{revision, kNotActing, again}));
  c->Stop();
  EXPECT_EQ(WaitEvents(4), (std::vector<int64_t>{revision, kNotActing, again, kNotActing}));
}

}  // namespace
}  // namespace kf::streaming
