#include "streaming/ddl/resource_key_locks.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "common/errors.h"

namespace kf::streaming::ddl {
namespace {

constexpr absl::Duration kWait = absl::Seconds(20);  // only failures wait this long
absl::Time Deadline() { return absl::Now() + kWait; }

ResourceKey Coll(std::string_view name) { return ResourceKey::Collection("default", name); }

TEST(ResourceKeyTest, ProtoRoundTripAndHierarchy) {
  for (const ResourceKey& k : {ResourceKey::Cluster(), ResourceKey::Database("db1"),
                               ResourceKey::Collection("db1", "c")}) {
    auto back = ResourceKey::FromProto(k.ToProto());
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(*back, k);
  }
  EXPECT_EQ(ResourceKey::Collection("db1", "c").ToString(), "collection:db1/c");
  EXPECT_EQ(ResourceKey::Collection("db1", "c").Ancestors(),
            (std::vector<ResourceKey>{ResourceKey::Cluster(), ResourceKey::Database("db1")}));
  EXPECT_EQ(ResourceKey::Database("db1").Ancestors(),
            std::vector<ResourceKey>{ResourceKey::Cluster()});
  EXPECT_TRUE(ResourceKey::Cluster().Ancestors().empty());
  // Sorted acquisition order: cluster, databases, collections.
  EXPECT_LT(ResourceKey::Cluster(), ResourceKey::Database("a"));
  EXPECT_LT(ResourceKey::Database("z"), ResourceKey::Collection("a", "a"));

  kingfisher::v1::ResourceKey bad;
  for (auto [domain, key] :
       std::vector<std::pair<std::string, std::string>>{{"table", "x"},
                                                        {"cluster", "x"},
                                                        {"database", ""},
                                                        {"database", "a/b"},
                                                        {"collection", "c"},
                                                        {"collection", "/c"},
                                                        {"collection", "a/b/c"}}) {
    bad.set_domain(domain);
    bad.set_key(key);
    EXPECT_EQ(ResourceKey::FromProto(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << domain << ":" << key;
  }
}

TEST(ResourceKeyLocksTest, SameKeyConflictsDifferentKeysDoNot) {
  ResourceKeyLocks locks;
  auto a = locks.Acquire({Coll("a")}, false, Deadline());
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = locks.Acquire({Coll("b")}, false, Deadline());
  ASSERT_TRUE(b.ok()) << b.status();  // parallel: shared intentions on db and cluster

  auto again = locks.Acquire({Coll("a")}, /*blocking=*/false, Deadline());
  EXPECT_EQ(GetStreamingCode(again.status()), StreamingCode::kResourceAcquired);
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAborted);
  EXPECT_NE(again.status().message().find("collection:default/a"), std::string::npos);

  auto timed = locks.Acquire({Coll("a")}, /*blocking=*/true, absl::Now());
  EXPECT_EQ(timed.status().code(), absl::StatusCode::kDeadlineExceeded);

  a->Release();
  EXPECT_FALSE(locks.IsHeld(Coll("a")));
  EXPECT_TRUE(locks.Acquire({Coll("a")}, false, Deadline()).ok());
}

TEST(ResourceKeyLocksTest, HierarchyClusterAndDatabaseConflicts) {
  ResourceKeyLocks locks;
  {
    auto c = locks.Acquire({Coll("a")}, false, Deadline());
    ASSERT_TRUE(c.ok());
    // A database-wide DDL conflicts with a collection DDL inside it, not with another database.
    EXPECT_EQ(GetStreamingCode(
                  locks.Acquire({ResourceKey::Database("default")}, false, Deadline()).status()),
              StreamingCode::kResourceAcquired);
    EXPECT_TRUE(locks.Acquire({ResourceKey::Database("other")}, false, Deadline()).ok());
    EXPECT_EQ(GetStreamingCode(locks.Acquire({ResourceKey::Cluster()}, false, Deadline()).status()),
              StreamingCode::kResourceAcquired);
  }
  {
    auto cluster = locks.Acquire({ResourceKey::Cluster()}, false, Deadline());
    ASSERT_TRUE(cluster.ok());
    EXPECT_FALSE(locks.Acquire({Coll("x")}, false, Deadline()).ok());
    EXPECT_FALSE(locks.Acquire({ResourceKey::Database("d")}, false, Deadline()).ok());
  }
  // A failed non-blocking request holds nothing.
  EXPECT_FALSE(locks.IsHeld(ResourceKey::Cluster()));
  EXPECT_FALSE(locks.IsHeld(ResourceKey::Database("default")));
  // Explicit database + collection in one request: the database is exclusive.
  auto both = locks.Acquire({Coll("a"), ResourceKey::Database("default")}, false, Deadline());
  ASSERT_TRUE(both.ok());
  EXPECT_FALSE(locks.Acquire({Coll("b")}, false, Deadline()).ok());
  EXPECT_EQ(both->keys(), (std::vector<ResourceKey>{ResourceKey::Database("default"), Coll("a")}));
}

TEST(ResourceKeyLocksTest, BlockingWaiterGetsTheKeyOnRelease) {
  ResourceKeyLocks locks;
  auto first = locks.Acquire({Coll("a")}, false, Deadline());
  ASSERT_TRUE(first.ok());
  absl::StatusOr<ResourceKeyLocks::Guard> second = absl::UnknownError("unset");
  std::thread waiter([&] { second = locks.Acquire({Coll("a")}, /*blocking=*/true, Deadline()); });
  first->Release();
  waiter.join();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE(locks.IsHeld(Coll("a")));
}

TEST(ResourceKeyLocksTest, DeadlineReleasesKeysTakenSoFar) {
  ResourceKeyLocks locks;
  auto b = locks.Acquire({Coll("b")}, false, Deadline());
  ASSERT_TRUE(b.ok());
  // Takes collection a (sorted first), then times out on b: a must be free again.
  auto ab = locks.Acquire({Coll("b"), Coll("a")}, /*blocking=*/true, absl::Now());
  EXPECT_EQ(ab.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(locks.IsHeld(Coll("a")));
  b->Release();
  EXPECT_FALSE(locks.IsHeld(ResourceKey::Cluster()));
}

// Two threads locking overlapping sets named in opposite orders never deadlock, and the
// critical sections of the shared key never overlap.
TEST(ResourceKeyLocksTest, SortedAcquisitionSerialisesWithoutDeadlock) {
  ResourceKeyLocks locks;
  int inside = 0;  // protected by the collection "b" lock under test
  bool overlap = false;
  auto worker = [&](std::vector<ResourceKey> keys) {
    for (int i = 0; i < 2000; ++i) {
      auto g = locks.Acquire(keys, /*blocking=*/true, Deadline());
      ASSERT_TRUE(g.ok()) << g.status();
      if (++inside != 1) overlap = true;
      --inside;
    }
  };
  std::thread t1(worker, std::vector<ResourceKey>{Coll("a"), Coll("b")});
  std::thread t2(worker, std::vector<ResourceKey>{Coll("b"), Coll("c"), Coll("a")});
  t1.join();
  t2.join();
  EXPECT_FALSE(overlap);
  EXPECT_FALSE(locks.IsHeld(ResourceKey::Cluster()));
}

TEST(ResourceKeyLocksTest, NoKeysIsInvalid) {
  ResourceKeyLocks locks;
  EXPECT_EQ(locks.Acquire({}, false, Deadline()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kf::streaming::ddl
