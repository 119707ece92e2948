// The ObjectStore contract, run against every store: the local directory store, the fault
// wrapper (no fault armed) around it, and the S3 store against a real Ceph RGW started once
// for the binary (testing/rgw_process.h). Every test works under its own key prefix, so the
// shared bucket needs no cleanup between tests.
#include <algorithm>
#include <barrier>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/fs/file_system.h"
#include "storage/object/fault_object_store.h"
#include "storage/object/local_object_store.h"
#include "storage/object/testing/store_under_test.h"

namespace kf::object {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

absl::Time Deadline() { return absl::Now() + absl::Seconds(30); }

std::vector<std::string> Keys(const ListResult& r) {
  std::vector<std::string> keys;
  for (const ObjectInfo& o : r.objects) keys.push_back(o.key);
  return keys;
}

class ObjectStoreContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto store = testing::MakeStoreUnderTest(GetParam());
    if (store.skip) GTEST_SKIP() << store.skip_reason;
    ASSERT_TRUE(store.store != nullptr) << store.skip_reason;
    owned_ = std::move(store);
    store_ = owned_.store.get();
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    const std::string test = info->name();  // "<Test>/<store>"
    prefix_ = "contract/" + test.substr(0, test.find('/')) + "/";
    // The shared bucket outlives a test (and --gtest_repeat runs it again): start clean.
    auto old = store_->List(prefix_, "", ObjectStore::kNoLimit, Deadline());
    ASSERT_TRUE(old.ok()) << old.status();
    for (const ObjectInfo& o : old->objects) ASSERT_TRUE(store_->Delete(o.key, Deadline()).ok());
  }

  std::string Key(const std::string& name) const { return prefix_ + name; }
  void MustPut(const std::string& name, const std::string& data) {
    auto etag = store_->Put(Key(name), data, {}, Deadline());
    ASSERT_TRUE(etag.ok()) << etag.status();
  }
  std::string MustGet(const std::string& name, const ByteRange& range = ByteRange::All()) {
    auto got = store_->Get(Key(name), range, Deadline());
    EXPECT_TRUE(got.ok()) << got.status();
    return got.ok() ? *got : "<error>";
  }

  testing::StoreUnderTest owned_;
  ObjectStore* store_ = nullptr;
  std::string prefix_;
};

TEST_P(ObjectStoreContractTest, PutGetHeadOverwrite) {
  auto etag1 = store_->Put(Key("obj"), "hello world", {}, Deadline());
  ASSERT_TRUE(etag1.ok()) << etag1.status();
  EXPECT_EQ(MustGet("obj"), "hello world");
  auto head = store_->Head(Key("obj"), Deadline());
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->key, Key("obj"));
  EXPECT_EQ(head->size, 11u);
  EXPECT_EQ(head->etag, *etag1);

  auto etag2 = store_->Put(Key("obj"), "replaced", {}, Deadline());
  ASSERT_TRUE(etag2.ok()) << etag2.status();
  EXPECT_NE(*etag2, *etag1);
  EXPECT_EQ(MustGet("obj"), "replaced");
  EXPECT_EQ(store_->Head(Key("obj"), Deadline())->etag, *etag2);
}

TEST_P(ObjectStoreContractTest, EmptyObject) {
  MustPut("empty", "");
  EXPECT_EQ(MustGet("empty"), "");
  auto head = store_->Head(Key("empty"), Deadline());
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->size, 0u);
  EXPECT_TRUE(
      absl::IsOutOfRange(store_->Get(Key("empty"), ByteRange::Suffix(1), Deadline()).status()));
}

TEST_P(ObjectStoreContractTest, MissingKeys) {
  EXPECT_TRUE(absl::IsNotFound(store_->Get(Key("nope"), ByteRange::All(), Deadline()).status()));
  EXPECT_TRUE(
      absl::IsNotFound(store_->Get(Key("nope"), ByteRange::Span(0, 1), Deadline()).status()));
  EXPECT_TRUE(absl::IsNotFound(store_->Head(Key("nope"), Deadline()).status()));
  EXPECT_TRUE(store_->Delete(Key("nope"), Deadline()).ok()) << "Delete is idempotent";
}

TEST_P(ObjectStoreContractTest, Ranges) {
  MustPut("r", "0123456789");
  EXPECT_EQ(MustGet("r", ByteRange::Span(2, 3)), "234");
  EXPECT_EQ(MustGet("r", ByteRange::Span(0, 1)), "0");
  EXPECT_EQ(MustGet("r", ByteRange::Span(7, 100)), "789") << "cut at the end";
  EXPECT_EQ(MustGet("r", ByteRange::From(6)), "6789");
  EXPECT_EQ(MustGet("r", ByteRange::From(9)), "9");
  EXPECT_EQ(MustGet("r", ByteRange::Suffix(4)), "6789");
  EXPECT_EQ(MustGet("r", ByteRange::Suffix(10)), "0123456789");
  EXPECT_EQ(MustGet("r", ByteRange::Suffix(50)), "0123456789") << "longer than the object";
  EXPECT_TRUE(
      absl::IsOutOfRange(store_->Get(Key("r"), ByteRange::Span(10, 1), Deadline()).status()));
  EXPECT_TRUE(absl::IsOutOfRange(store_->Get(Key("r"), ByteRange::From(11), Deadline()).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(store_->Get(Key("r"), ByteRange::Span(2, 0), Deadline()).status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(store_->Get(Key("r"), ByteRange::Suffix(0), Deadline()).status()));
}

TEST_P(ObjectStoreContractTest, ListIsInKeyOrderWithPrefixAndStartAfter) {
  // Bytewise order: '-' < '.' < '/' < digits < letters; "a" and "a/..." coexist.
  const std::vector<std::string> names = {"b", "a/c/d", "a0", "a", "a.b", "a-b", "a/b", "ab"};
  for (const std::string& n : names) MustPut(n, "x" + n);
  auto all = store_->List(prefix_, "", ObjectStore::kNoLimit, Deadline());
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_THAT(Keys(*all), ElementsAre(Key("a"), Key("a-b"), Key("a.b"), Key("a/b"), Key("a/c/d"),
                                      Key("a0"), Key("ab"), Key("b")));
  EXPECT_FALSE(all->truncated);
  EXPECT_EQ(all->objects[1].size, 4u);

  auto dir = store_->List(Key("a/"), "", ObjectStore::kNoLimit, Deadline());
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_THAT(Keys(*dir), ElementsAre(Key("a/b"), Key("a/c/d")));

  auto partial = store_->List(Key("a"), "", ObjectStore::kNoLimit, Deadline());
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_EQ(partial->objects.size(), 7u) << "a partial segment matches a, a-b, ... ab";

  auto after = store_->List(prefix_, Key("a.b"), ObjectStore::kNoLimit, Deadline());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_THAT(Keys(*after), ElementsAre(Key("a/b"), Key("a/c/d"), Key("a0"), Key("ab"), Key("b")));

  auto after_dir = store_->List(prefix_, Key("a/b"), ObjectStore::kNoLimit, Deadline());
  ASSERT_TRUE(after_dir.ok()) << after_dir.status();
  EXPECT_THAT(Keys(*after_dir), ElementsAre(Key("a/c/d"), Key("a0"), Key("ab"), Key("b")));

  auto none = store_->List(Key("zzz"), "", ObjectStore::kNoLimit, Deadline());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->objects.empty());
  EXPECT_FALSE(none->truncated);
}

TEST_P(ObjectStoreContractTest, ListPaginates) {
  std::vector<std::string> want;
  for (int i = 0; i < 25; ++i) {
    char name[16];
    std::snprintf(name, sizeof name, "k%03d", i);
    MustPut(name, "v");
    want.push_back(Key(name));
  }
  std::vector<std::string> got;
  std::string start_after;
  int pages = 0;
  for (;;) {
    auto page = store_->List(prefix_, start_after, 7, Deadline());
    ASSERT_TRUE(page.ok()) << page.status();
    ASSERT_LE(page->objects.size(), 7u);
    for (const ObjectInfo& o : page->objects) got.push_back(o.key);
    ++pages;
    if (!page->truncated) break;
    ASSERT_FALSE(page->objects.empty());
    start_after = page->objects.back().key;
  }
  EXPECT_EQ(pages, 4);
  EXPECT_THAT(got, ElementsAreArray(want));

  auto exact = store_->List(prefix_, "", 25, Deadline());
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_EQ(exact->objects.size(), 25u);
  EXPECT_FALSE(exact->truncated) << "nothing more matches";
  EXPECT_TRUE(absl::IsInvalidArgument(store_->List(prefix_, "", 0, Deadline()).status()));
}

TEST_P(ObjectStoreContractTest, Delete) {
  MustPut("d", "x");
  ASSERT_TRUE(store_->Delete(Key("d"), Deadline()).ok());
  EXPECT_TRUE(absl::IsNotFound(store_->Head(Key("d"), Deadline()).status()));
  auto list = store_->List(prefix_, "", ObjectStore::kNoLimit, Deadline());
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->objects.empty());
  ASSERT_TRUE(store_->Delete(Key("d"), Deadline()).ok());
}

// GetShared: Get's bytes, valid while held — also once the object is replaced or deleted (the
// local store's mapping of the old file).
TEST_P(ObjectStoreContractTest, GetSharedHoldsTheBytesAfterAReplaceAndADelete) {
  MustPut("s", "shared bytes");
  MustPut("e", "");
  auto got = store_->GetShared(Key("s"), Deadline());
  ASSERT_TRUE(got.ok()) << got.status();
  auto empty = store_->GetShared(Key("e"), Deadline());
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->bytes, "");
  MustPut("s", "replaced");
  ASSERT_TRUE(store_->Delete(Key("s"), Deadline()).ok());
  EXPECT_EQ(got->bytes, "shared bytes");
  EXPECT_TRUE(absl::IsNotFound(store_->GetShared(Key("s"), Deadline()).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->GetShared("/bad", Deadline()).status()));
}

TEST_P(ObjectStoreContractTest, ConditionalCreate) {
  ASSERT_TRUE(store_->Put(Key("fence"), "term-1", {.if_absent = true}, Deadline()).ok());
  auto again = store_->Put(Key("fence"), "term-2", {.if_absent = true}, Deadline());
  EXPECT_TRUE(absl::IsAlreadyExists(again.status())) << again.status();
  EXPECT_EQ(MustGet("fence"), "term-1");
  // An unconditional Put still replaces it.
  MustPut("fence", "term-3");
  EXPECT_EQ(MustGet("fence"), "term-3");
}

TEST_P(ObjectStoreContractTest, ConditionalCreateRaceHasOneWinner) {
  constexpr int kThreads = 8;
  for (int round = 0; round < 3; ++round) {
    const std::string key = Key("race" + std::to_string(round));
    std::barrier start(kThreads);
    std::vector<absl::Status> results(kThreads);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        start.arrive_and_wait();
        results[t] =
            store_->Put(key, "writer-" + std::to_string(t), {.if_absent = true}, Deadline())
                .status();
      });
    }
    for (auto& th : threads) th.join();
    int winners = 0, exists = 0, winner = -1;
    for (int t = 0; t < kThreads; ++t) {
      if (results[t].ok()) {
        ++winners;
        winner = t;
      } else if (absl::IsAlreadyExists(results[t])) {
        ++exists;
      } else {
        ADD_FAILURE() << "writer " << t << ": " << results[t];
      }
    }
    EXPECT_EQ(winners, 1);
    EXPECT_EQ(exists, kThreads - 1);
    auto got = store_->Get(key, ByteRange::All(), Deadline());
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, "writer-" + std::to_string(winner)) << "the winner's bytes are stored";
  }
}

TEST_P(ObjectStoreContractTest, LargeObject) {
  std::string big(16 << 20, '\0');
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (char& c : big) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  MustPut("big", big);
  auto head = store_->Head(Key("big"), Deadline());
  ASSERT_TRUE(head.ok()) << head.status();
  EXPECT_EQ(head->size, big.size());
  EXPECT_TRUE(MustGet("big") == big);
  auto shared = store_->GetShared(Key("big"), Deadline());
  ASSERT_TRUE(shared.ok()) << shared.status();
  EXPECT_TRUE(shared->bytes == big);
  const size_t mid = (8 << 20) - 3;
  EXPECT_TRUE(MustGet("big", ByteRange::Span(mid, 1 << 20)) == big.substr(mid, 1 << 20));
  EXPECT_TRUE(MustGet("big", ByteRange::Suffix(100)) == big.substr(big.size() - 100));
}

TEST_P(ObjectStoreContractTest, BadKeysAreRejected) {
  const std::string too_long(kMaxKeyBytes + 1, 'a');
  for (const std::string& key :
       {std::string(""), std::string("/abs"), std::string("a//b"), std::string("a/"),
        std::string("a/../b"), std::string("./a"), std::string("sp ace"), std::string("q?x"),
        std::string("t~"), std::string("u\xc3\xa9"), too_long}) {
    SCOPED_TRACE(key);
    EXPECT_TRUE(absl::IsInvalidArgument(store_->Put(key, "x", {}, Deadline()).status()));
    EXPECT_TRUE(absl::IsInvalidArgument(store_->Get(key, ByteRange::All(), Deadline()).status()));
    EXPECT_TRUE(absl::IsInvalidArgument(store_->Head(key, Deadline()).status()));
    EXPECT_TRUE(absl::IsInvalidArgument(store_->Delete(key, Deadline())));
  }
  EXPECT_TRUE(absl::IsInvalidArgument(store_->List("/x", "", 10, Deadline()).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(store_->List("x", "a b", 10, Deadline()).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(
      store_->Put(Key(std::string(kMaxSegmentBytes + 1, 's')), "x", {}, Deadline()).status()));
  std::string longest;
  while (prefix_.size() + longest.size() < kMaxKeyBytes) {
    const size_t left = kMaxKeyBytes - prefix_.size() - longest.size();
    if (!longest.empty()) longest += '/';
    longest += std::string(std::min(left - (longest.empty() ? 0 : 1), kMaxSegmentBytes), 'k');
  }
  ASSERT_EQ(Key(longest).size(), kMaxKeyBytes);
  MustPut(longest, "fits");
  EXPECT_EQ(MustGet(longest), "fits");
}

TEST_P(ObjectStoreContractTest, PassedDeadline) {
  MustPut("dl", "x");
  const absl::Time past = absl::Now() - absl::Seconds(1);
  EXPECT_TRUE(absl::IsDeadlineExceeded(store_->Put(Key("dl2"), "x", {}, past).status()));
  EXPECT_TRUE(absl::IsDeadlineExceeded(store_->Get(Key("dl"), ByteRange::All(), past).status()));
  EXPECT_TRUE(absl::IsDeadlineExceeded(store_->Head(Key("dl"), past).status()));
  EXPECT_TRUE(absl::IsDeadlineExceeded(store_->List(prefix_, "", 10, past).status()));
  EXPECT_TRUE(absl::IsDeadlineExceeded(store_->Delete(Key("dl"), past)));
  EXPECT_TRUE(absl::IsNotFound(store_->Head(Key("dl2"), Deadline()).status())) << "not applied";
  EXPECT_EQ(MustGet("dl"), "x") << "not deleted";
}

INSTANTIATE_TEST_SUITE_P(Stores, ObjectStoreContractTest,
                         ::testing::ValuesIn(testing::StoreKinds()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace kf::object
