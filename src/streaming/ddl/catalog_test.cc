#include "streaming/ddl/catalog.h"

#include <gtest/gtest.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "kingfisher/v1/checkpoint.pb.h"
#include "message/payload.h"
#include "message/validate.h"
#include "streaming/ddl/testing/ddl_test_util.h"

namespace kf::streaming::ddl {
namespace {

using kingfisher::v1::CollectionInfo;

const std::vector<std::string> kPChannels = {"kf-dml_0", "kf-dml_1", "kf-dml_2", "kf-dml_3"};

TEST(CatalogRulesTest, Names) {
  for (const std::string& ok :
       std::vector<std::string>{"a", "_x", "Orders_2024", std::string(kMaxNameLength, 'n')}) {
    EXPECT_TRUE(CheckName("collection", ok).ok()) << ok;
  }
  for (const std::string& bad : std::vector<std::string>{"", "1abc", "a-b", "a/b", "a b", "é",
                                                         std::string(kMaxNameLength + 1, 'n')}) {
    EXPECT_EQ(CheckName("collection", bad).code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

TEST(CatalogRulesTest, PlaceShardsByLoadThenConfiguredOrder) {
  std::vector<std::string> p = {"kf-dml_0", "kf-dml_1", "kf-dml_2"};
  EXPECT_EQ(PlaceShards(p, {}, 5, 4), (std::vector<std::string>{"kf-dml_0_5v0", "kf-dml_1_5v1",
                                                                "kf-dml_2_5v2", "kf-dml_0_5v3"}));
  EXPECT_EQ(PlaceShards(p, {{"kf-dml_0", 2}, {"kf-dml_2", 1}}, 6, 2),
            (std::vector<std::string>{"kf-dml_1_6v0", "kf-dml_1_6v1"}));
}

class CatalogTest : public testing::DdlTest {
 protected:
  void SetUp() override {
    DdlTest::SetUp();
    Open(revision_);
  }
  void TearDown() override {
    catalog_.reset();
    broadcaster_.reset();
    DdlTest::TearDown();
  }
  // A coordinator taking office: broadcaster + catalog, then recovery.
  void Open(int64_t revision) {
    catalog_.reset();
    broadcaster_.reset();
    Broadcaster::Options o;
    o.retry_backoff = absl::Milliseconds(1);
    o.retry_backoff_max = absl::Milliseconds(5);
    broadcaster_ = std::make_unique<Broadcaster>(faulty_.get(), keys_, revision, &appender_, o);
    catalog_ = std::make_unique<Catalog>(broadcaster_.get(), keys_,
                                         Catalog::Options{.pchannels = kPChannels});
    ASSERT_TRUE(broadcaster_->Recover(Deadline()).ok());
  }
  static Catalog::CollectionSpec Spec(std::string name, uint32_t shards = 2) {
    Catalog::CollectionSpec s;
    s.name = std::move(name);
    s.dim = 8;
    s.metric = kingfisher::v1::L2;
    s.shards = shards;
    return s;
  }
  static Catalog::Call Call(bool blocking = true) {
    Catalog::Call c;
    c.blocking = blocking;
    c.deadline = Deadline();
    return c;
  }
  std::vector<std::string> VChannels(const CollectionInfo& c) {
    return {c.schema().vchannels().begin(), c.schema().vchannels().end()};
  }
  // The types appended to `vchannel`, in order.
  std::vector<MessageType> Types(const std::string& vchannel) {
    std::vector<MessageType> out;
    for (const auto& m : appender_.log(vchannel)) out.push_back(m.type());
    return out;
  }

  testing::FakeAppender appender_;
  std::unique_ptr<Broadcaster> broadcaster_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(CatalogTest, CreateDescribeListDrop) {
  auto c = catalog_->CreateCollection(Spec("orders"), Call());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->state(), kingfisher::v1::COLLECTION_CREATED);
  EXPECT_EQ(c->schema().collection_id(), 1);
  EXPECT_EQ(VChannels(*c), (std::vector<std::string>{"kf-dml_0_1v0", "kf-dml_1_1v1"}));
  ASSERT_EQ(c->partitions_size(), 1);
  EXPECT_EQ(c->partitions(0).name(), "_default");
  EXPECT_GT(c->create_broadcast_id(), 0u);
  for (const std::string& v : VChannels(*c)) {
    auto log = appender_.log(v);
    ASSERT_EQ(log.size(), 1u);
    EXPECT_TRUE(ValidateProducedMessage(log[0]).ok()) << ValidateProducedMessage(log[0]);
    auto schema = DecodeCollectionSchema(log[0].payload());
    ASSERT_TRUE(schema.ok());
    EXPECT_EQ(schema->collection_id(), 1);
    EXPECT_EQ(schema->vchannels_size(), 2);
    EXPECT_EQ(schema->name(), "orders");
  }

  auto described = catalog_->DescribeCollection("default", "orders", Deadline());
  ASSERT_TRUE(described.ok());
  EXPECT_EQ(described->SerializeAsString(), c->SerializeAsString());
  ASSERT_TRUE(catalog_->CreateCollection(Spec("users", 1), Call()).ok());
  auto list = catalog_->ListCollections("default", Deadline());
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_TRUE(catalog_->ListCollections("other", Deadline())->empty());

  ASSERT_TRUE(catalog_->DropCollection("default", "orders", Call()).ok());
  EXPECT_EQ(
      GetStreamingCode(catalog_->DescribeCollection("default", "orders", Deadline()).status()),
      StreamingCode::kCollectionNotFound);
  EXPECT_EQ(catalog_->ListCollections("default", Deadline())->size(), 1u);
  for (const std::string& v : VChannels(*c)) {
    EXPECT_EQ(Types(v), (std::vector<MessageType>{MessageType::kCreateCollection,
                                                  MessageType::kDropCollection}));
  }
  auto dropped = store_->Get(keys_.collection(1), Deadline());
  ASSERT_TRUE(dropped.ok());
  auto info = ParseCollectionInfo(keys_, dropped->kv.key, dropped->kv.value);
  EXPECT_EQ(info->state(), kingfisher::v1::COLLECTION_DROPPED);
  EXPECT_GT(info->drop_broadcast_id(), info->create_broadcast_id());

  // The name is free again; the id is not reused.
  auto again = catalog_->CreateCollection(Spec("orders"), Call());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->schema().collection_id(), 3);
}

TEST_F(CatalogTest, BadInputLeavesTheCatalogUnchanged) {
  ASSERT_TRUE(catalog_->CreateCollection(Spec("orders"), Call()).ok());
  const auto before = Dump();
  const size_t appends = appender_.calls().size();

  auto expect = [&](absl::Status s, absl::StatusCode code, const std::string& what) {
    EXPECT_EQ(s.code(), code) << what << ": " << s;
  };
  auto create = [&](Catalog::CollectionSpec s) {
    return catalog_->CreateCollection(s, Call()).status();
  };
  auto dup = create(Spec("orders"));
  expect(dup, absl::StatusCode::kAlreadyExists, "duplicate name");
  EXPECT_EQ(GetStreamingCode(dup), StreamingCode::kCollectionExists);
  auto s = Spec("x");
  s.dim = 0;
  expect(create(s), absl::StatusCode::kInvalidArgument, "dim 0");
  s.dim = kMaxDim + 1;
  expect(create(s), absl::StatusCode::kInvalidArgument, "dim too large");
  s = Spec("x");
  s.metric = kingfisher::v1::METRIC_UNSPECIFIED;
  expect(create(s), absl::StatusCode::kInvalidArgument, "no metric");
  s.metric = static_cast<kingfisher::v1::MetricType>(99);
  expect(create(s), absl::StatusCode::kInvalidArgument, "unknown metric");
  expect(create(Spec("x", 0)), absl::StatusCode::kInvalidArgument, "0 shards");
  expect(create(Spec("x", kMaxShards + 1)), absl::StatusCode::kInvalidArgument, "too many shards");
  expect(create(Spec("bad-name")), absl::StatusCode::kInvalidArgument, "bad name");
  expect(create(Spec("")), absl::StatusCode::kInvalidArgument, "empty name");
  s = Spec("x");
  s.database = "a/b";
  expect(create(s), absl::StatusCode::kInvalidArgument, "bad database");

  auto unknown = catalog_->DropCollection("default", "nope", Call());
  expect(unknown, absl::StatusCode::kNotFound, "drop unknown");
  EXPECT_EQ(GetStreamingCode(unknown), StreamingCode::kCollectionNotFound);
  expect(catalog_->CreatePartition("default", "nope", "p", Call()), absl::StatusCode::kNotFound,
         "partition of unknown collection");
  expect(catalog_->DropPartition("default", "orders", "nope", Call()), absl::StatusCode::kNotFound,
         "drop unknown partition");
  expect(catalog_->DropPartition("default", "orders", "_default", Call()),
         absl::StatusCode::kInvalidArgument, "drop _default");
  expect(catalog_->CreatePartition("default", "orders", "_default", Call()),
         absl::StatusCode::kAlreadyExists, "duplicate partition");
  expect(catalog_->CreatePartition("default", "orders", "p-1", Call()),
         absl::StatusCode::kInvalidArgument, "bad partition name");

  EXPECT_EQ(Dump(), before);
  EXPECT_EQ(appender_.calls().size(), appends);
}

TEST_F(CatalogTest, SpreadsShardsOverThePChannelsByLoad) {
  auto a = catalog_->CreateCollection(Spec("a", 3), Call());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(VChannels(*a),
            (std::vector<std::string>{"kf-dml_0_1v0", "kf-dml_1_1v1", "kf-dml_2_1v2"}));
  auto b = catalog_->CreateCollection(Spec("b", 2), Call());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(VChannels(*b), (std::vector<std::string>{"kf-dml_3_2v0", "kf-dml_0_2v1"}));
  // Dropped collections no longer count: load is b's only (kf-dml_0 and kf-dml_3).
  ASSERT_TRUE(catalog_->DropCollection("default", "a", Call()).ok());
  auto c = catalog_->CreateCollection(Spec("c", 3), Call());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(VChannels(*c),
            (std::vector<std::string>{"kf-dml_1_3v0", "kf-dml_2_3v1", "kf-dml_0_3v2"}));
}

TEST_F(CatalogTest, Partitions) {
  auto c = catalog_->CreateCollection(Spec("orders"), Call());
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE(catalog_->CreatePartition("default", "orders", "p2024", Call()).ok());
  auto d = catalog_->DescribeCollection("default", "orders", Deadline());
  ASSERT_EQ(d->partitions_size(), 2);
  EXPECT_EQ(d->partitions(1).name(), "p2024");
  EXPECT_EQ(d->partitions(1).state(), kingfisher::v1::PARTITION_CREATED);
  ASSERT_TRUE(catalog_->DropPartition("default", "orders", "p2024", Call()).ok());
  EXPECT_EQ(catalog_->DescribeCollection("default", "orders", Deadline())->partitions_size(), 1);
  for (const std::string& v : VChannels(*c)) {
    EXPECT_EQ(Types(v), (std::vector<MessageType>{MessageType::kCreateCollection,
                                                  MessageType::kCreatePartition,
                                                  MessageType::kDropPartition}));
    auto payload = DecodePartition(appender_.log(v)[1].payload());
    ASSERT_TRUE(payload.ok());
    EXPECT_EQ(payload->collection_id(), c->schema().collection_id());
    EXPECT_EQ(payload->partition(), "p2024");
  }
  // The name can be created again.
  EXPECT_TRUE(catalog_->CreatePartition("default", "orders", "p2024", Call()).ok());
}

// Flush: a ManualFlush on every vchannel of the collection, then a wait until each vchannel's
// pchannel committed a checkpoint at or above the flush (what a node's recovery storage writes).
TEST_F(CatalogTest, FlushBroadcastsAManualFlushAndWaitsForEachPChannelsCheckpoint) {
  auto c = catalog_->CreateCollection(Spec("orders"), Call());
  ASSERT_TRUE(c.ok()) << c.status();
  auto checkpoint_at = [&](uint64_t ts) {
    kingfisher::v1::PChannelCheckpoint checkpoint;
    checkpoint.set_checkpoint_ts(ts);
    for (const std::string& p : kPChannels) {
      ASSERT_TRUE(
          store_->Put(keys_.checkpoints_prefix() + p, checkpoint.SerializeAsString(), Deadline())
              .ok());
    }
  };
  checkpoint_at(1000);  // below every flush (the fake appender's timeticks are 1000 + n)
  Catalog::Call quick = Call();
  quick.deadline = absl::Now() + absl::Milliseconds(300);
  auto behind = catalog_->Flush("default", "orders", quick);
  EXPECT_TRUE(absl::IsDeadlineExceeded(behind.status())) << behind.status();
  EXPECT_NE(behind.status().message().find("is at timetick 1000, below the flush"),
            std::string::npos)
      << behind.status();
  checkpoint_at(1'000'000);
  auto flushed = catalog_->Flush("default", "orders", Call());
  ASSERT_TRUE(flushed.ok()) << flushed.status();
  ASSERT_EQ(flushed->size(), 2u);
  for (size_t i = 0; i < flushed->size(); ++i) {
    const kingfisher::v1::FlushedVChannel& f = (*flushed)[i];
    EXPECT_EQ(f.vchannel(), c->schema().vchannels(static_cast<int>(i)));
    EXPECT_EQ(f.checkpoint_timetick(), 1'000'000u);
    EXPECT_GT(f.flush_timetick(), 1000u);
    EXPECT_EQ(Types(f.vchannel()),
              (std::vector<MessageType>{MessageType::kCreateCollection, MessageType::kManualFlush,
                                        MessageType::kManualFlush}));
  }
  EXPECT_EQ(GetStreamingCode(catalog_->Flush("default", "nope", Call()).status()),
            StreamingCode::kCollectionNotFound);
  EXPECT_EQ(GetStreamingCode(catalog_->Flush("default", "9bad", Call()).status()),
            StreamingCode::kInvalidArgument);
}

// The DROPPING mark is in the store (with the task) before any DropCollection append.
TEST_F(CatalogTest, DroppingIsPersistedBeforeTheFirstDropAppend) {
  ASSERT_TRUE(catalog_->CreateCollection(Spec("orders"), Call()).ok());
  std::atomic<int> checked{0};
  appender_.set_hook([&](const MutableMessage& m) {
    if (m.type() != MessageType::kDropCollection || checked++ > 0) return;
    auto got = store_->Get(keys_.collection(1), Deadline());
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(ParseCollectionInfo(keys_, got->kv.key, got->kv.value)->state(),
              kingfisher::v1::COLLECTION_DROPPING);
    EXPECT_TRUE(
        store_->Get(keys_.broadcast_task(m.broadcast_header()->broadcast_id()), Deadline()).ok());
  });
  ASSERT_TRUE(catalog_->DropCollection("default", "orders", Call()).ok());
  EXPECT_EQ(checked.load(), 2);
}

TEST_F(CatalogTest, SameNameIsSerialisedOtherNamesRunInParallel) {
  appender_.Hold(true);
  absl::StatusOr<CollectionInfo> first = absl::UnknownError("unset");
  std::thread t([&] { first = catalog_->CreateCollection(Spec("orders"), Call()); });
  ASSERT_TRUE(appender_.WaitCalls(2, Deadline()));
  EXPECT_EQ(GetStreamingCode(catalog_->CreateCollection(Spec("orders"), Call(false)).status()),
            StreamingCode::kResourceAcquired);
  EXPECT_EQ(GetStreamingCode(catalog_->DropCollection("default", "orders", Call(false))),
            StreamingCode::kResourceAcquired);
  // Another name is not blocked: its broadcast is under way too (held appends).
  absl::StatusOr<CollectionInfo> other = absl::UnknownError("unset");
  std::thread t2([&] { other = catalog_->CreateCollection(Spec("users"), Call(false)); });
  ASSERT_TRUE(appender_.WaitCalls(4, Deadline()));
  appender_.Hold(false);
  t.join();
  t2.join();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(other.ok()) << other.status();
  // A blocking create of the taken name waits its turn, then sees it exists.
  EXPECT_EQ(catalog_->CreateCollection(Spec("orders"), Call()).status().code(),
            absl::StatusCode::kAlreadyExists);
}

// A coordinator dies during a create and a drop; its successor completes both exactly once.
TEST_F(CatalogTest, CrashedDdlCompletesAfterRecovery) {
  appender_.Hold(true);
  absl::StatusOr<CollectionInfo> r = absl::UnknownError("unset");
  std::thread t([&] { r = catalog_->CreateCollection(Spec("orders"), Call()); });
  ASSERT_TRUE(appender_.WaitCalls(2, Deadline()));
  EXPECT_EQ(catalog_->DescribeCollection("default", "orders", Deadline())->state(),
            kingfisher::v1::COLLECTION_CREATING);
  broadcaster_->Stop();
  t.join();
  EXPECT_FALSE(r.ok());
  appender_.Hold(false);

  Open(TakeOffice());
  ASSERT_TRUE(broadcaster_->WaitIdle(Deadline()));
  auto c = catalog_->DescribeCollection("default", "orders", Deadline());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->state(), kingfisher::v1::COLLECTION_CREATED);
  for (const std::string& v : VChannels(*c)) EXPECT_EQ(appender_.log(v).size(), 1u);

  appender_.Hold(true);
  absl::Status dropped = absl::UnknownError("unset");
  std::thread t2([&] { dropped = catalog_->DropCollection("default", "orders", Call()); });
  ASSERT_TRUE(appender_.WaitCalls(6, Deadline()));  // 2 + 2 re-appends + 2 drops
  broadcaster_->Stop();
  t2.join();
  appender_.Hold(false);
  EXPECT_EQ(catalog_->DescribeCollection("default", "orders", Deadline())->state(),
            kingfisher::v1::COLLECTION_DROPPING);

  Open(TakeOffice());
  ASSERT_TRUE(broadcaster_->WaitIdle(Deadline()));
  EXPECT_EQ(catalog_->DescribeCollection("default", "orders", Deadline()).status().code(),
            absl::StatusCode::kNotFound);
  for (const std::string& v : VChannels(*c)) {
    EXPECT_EQ(Types(v), (std::vector<MessageType>{MessageType::kCreateCollection,
                                                  MessageType::kDropCollection}));
  }
}

TEST_F(CatalogTest, ADeposedCatalogChangesNothing) {
  ASSERT_TRUE(catalog_->CreateCollection(Spec("orders"), Call()).ok());
  TakeOffice();
  const auto before = Dump();
  EXPECT_FALSE(catalog_->CreateCollection(Spec("users"), Call()).ok());
  EXPECT_FALSE(catalog_->DropCollection("default", "orders", Call()).ok());
  EXPECT_FALSE(catalog_->CreatePartition("default", "orders", "p", Call()).ok());
  EXPECT_EQ(Dump(), before);
}

}  // namespace
}  // namespace kf::streaming::ddl
