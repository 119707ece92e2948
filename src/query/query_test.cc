#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "common/hybrid_time.h"
#include "common/testing/wait_until.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "message/builders.h"
#include "message/payload.h"
#include "query/channel_applier.h"
#include "query/channel_follower.h"
#include "query/query_registry.h"
#include "query/shard.h"
#include "search/metric.h"
#include "storage/fs/file_system.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/object/fault_object_store.h"
#include "storage/object/local_object_store.h"
#include "storage/object/testing/rgw_process.h"
#include "storage/object/testing/store_under_test.h"
#include "storage/tso/timestamp_allocator.h"
#include "trace/testing/scoped_in_memory_tracing.h"
#include "trace/traceparent.h"
#include "wal/backends/testing/backend_under_test.h"
#include "wal/collections/test_messages.h"
#include "wal/txn/txn_message.h"
#include "wal/wal_impl.h"

namespace kf::query {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using wal::testing::BackendKind;

kingfisher::v1::InsertBatch Batch(std::vector<int64_t> pks, uint32_t dim, float base,
                                  std::string partition = "") {
  kingfisher::v1::InsertBatch b;
  b.set_partition(std::move(partition));
  b.set_dim(dim);
  for (size_t i = 0; i < pks.size(); ++i) {
    b.add_pks(pks[i]);
    for (uint32_t d = 0; d < dim; ++d) b.add_vectors(base + static_cast<float>(i));
  }
  return b;
}

kingfisher::v1::DeletePks Pks(std::vector<int64_t> pks) {
  kingfisher::v1::DeletePks d;
  for (int64_t pk : pks) d.add_pks(pk);
  return d;
}

std::vector<int64_t> PksOf(const std::vector<search::Hit>& hits) {
  std::vector<int64_t> out;
  for (const auto& h : hits) out.push_back(h.pk);
  return out;
}

TEST(ShardTest, SearchesEveryPartitionOrTheOneNamed) {
  Shard shard("kf-dml_0_1v0", {.collection_id = 1, .dim = 2}, {.chunk_rows = 2}, {.ts = 1});
  shard.CreatePartition("p1", {.ts = 2});
  shard.Insert(Batch({1, 2}, 2, 0), {.ts = 10}, false);           // (0,0) (1,1) in _default
  shard.Insert(Batch({3}, 2, 0.5f, "p1"), {.ts = 11}, false);     // (0.5,0.5) in p1
  shard.Insert(Batch({4}, 2, 5, "_default"), {.ts = 12}, false);  // "" and "_default": one
  const float q[] = {0.4f, 0.4f};
  EXPECT_THAT(PksOf(*shard.Search(q, 10, 0, {.ts = 12}, std::nullopt)), ElementsAre(3, 1, 2, 4));
  EXPECT_THAT(PksOf(*shard.Search(q, 10, 0, {.ts = 12}, "p1")), ElementsAre(3));
  EXPECT_THAT(PksOf(*shard.Search(q, 2, 0, {.ts = 12}, "")), ElementsAre(1, 2));
  EXPECT_THAT(PksOf(*shard.Search(q, 10, 0, {.ts = 10}, std::nullopt)), ElementsAre(1, 2));
  auto unknown = shard.Search(q, 10, 0, {.ts = 12}, "p2");
  EXPECT_EQ(GetStreamingCode(unknown.status()), StreamingCode::kCollectionNotFound);
  EXPECT_THAT(std::string(unknown.status().message()), ::testing::HasSubstr("partition p2"));

  shard.Delete(Pks({3, 1}), 13, false);  // a delete reaches every partition
  EXPECT_THAT(PksOf(*shard.Search(q, 10, 0, {.ts = 13}, std::nullopt)), ElementsAre(2, 4));
  EXPECT_THAT(shard.Get(3, 12), ElementsAre(ElementsAre(0.5f, 0.5f)));
  EXPECT_THAT(shard.Get(3, 13), IsEmpty());
  EXPECT_EQ(shard.rows(), 4u);

  shard.DropPartition("p1");
  EXPECT_FALSE(shard.Search(q, 10, 0, {.ts = 12}, "p1").ok());
  EXPECT_THAT(PksOf(*shard.Search(q, 10, 0, {.ts = 12}, std::nullopt)), ElementsAre(1, 2, 4));
}

TEST(ChannelApplierTest, ACorruptPayloadOfACreatedCollectionIsDataLoss) {
  ChannelApplier applier("kf-dml_0", {});
  const std::string vc = "kf-dml_0_42v0";
  ASSERT_TRUE(
      applier.Apply(ImmutableMessage(MessageId(), wal::testing::CreateCollection(vc, 42, 4, 1)))
          .ok());
  ASSERT_NE(applier.shard(vc), nullptr);
  MutableMessage bad(MessageType::kInsert, "\xff\xff not protobuf");
  bad.set_vchannel(vc);
  const absl::Status s = applier.Apply(ImmutableMessage(MessageId(), std::move(bad)));
  EXPECT_EQ(GetStreamingCode(s), StreamingCode::kDataLoss) << s;
  // A raw vchannel has no schema: its messages pass untouched.
  MutableMessage raw(MessageType::kInsert, "anything");
  raw.set_vchannel("kf-dml_0_orders");
  EXPECT_TRUE(applier.Apply(ImmutableMessage(MessageId(), std::move(raw))).ok());
}

// The follower's copy of the WAL's state (what a checkpoint carries) follows replication
// (docs/replication.md): the configuration of an AlterReplicateConfig, and the checkpoint of a
// replicated message outside a transaction and of a replicated Txn (its commit's `_rh`).
TEST(ChannelApplierTest, TheCopyOfTheWalStateFollowsReplication) {
  ChannelApplier applier("west-dml_0", {});
  kingfisher::v1::ReplicateConfiguration config;
  for (const char* id : {"east", "west"}) {
    kingfisher::v1::ReplicateCluster* c = config.add_clusters();
    c->set_cluster_id(id);
    c->set_endpoint(std::string(id) + ":1");
    c->add_pchannels(std::string(id) + "-dml_0");
  }
  kingfisher::v1::ReplicateTopologyEdge* e = config.add_topology();
  e->set_source_cluster_id("east");
  e->set_target_cluster_id("west");
  uint64_t ts = 0;
  auto apply = [&](MutableMessage m) {
    m.set_timetick(TimeTick(++ts));
    return applier.Apply(ImmutableMessage(MessageId(WalKind::kLocal, 0, ts), std::move(m)));
  };
  auto replicated = [](MutableMessage m, uint64_t source_tt) {
    kingfisher::v1::ReplicateHeader h;
    h.set_cluster_id("east");
    h.set_message_id(MessageId(WalKind::kLocal, 0, source_tt).Encode());
    h.set_time_tick(source_tt);
    m.set_replicate_header(h);
    return m;
  };
  MutableMessage alter(MessageType::kAlterReplicateConfig, config.SerializeAsString());
  alter.set_vchannel("west-dml_0_replicate");
  ASSERT_TRUE(apply(std::move(alter)).ok());
  MutableMessage row(MessageType::kInsert, "r");
  row.set_vchannel("west-dml_0_orders");
  ASSERT_TRUE(apply(replicated(row, 500)).ok());
  auto checkpoint_of = [&] {
    const CheckpointPlan plan = applier.PlanCheckpoint();
    EXPECT_TRUE(plan.wal.has_value());
    EXPECT_EQ(plan.wal->replicate().config().clusters_size(), 2);
    EXPECT_EQ(plan.wal->replicate().checkpoints_size(), 1);
    return plan.wal->replicate().checkpoints_size() == 1
               ? plan.wal->replicate().checkpoints(0).time_tick()
               : 0;
  };
  EXPECT_EQ(checkpoint_of(), 500u);

  // A Txn as a reader delivers it: Begin, body, Commit, the Txn carrying the commit's `_rh`.
  kingfisher::v1::TxnContext txn;
  txn.set_txn_id(100);
  std::vector<ImmutableMessagePtr> inner;
  for (MutableMessage m : {NewBeginTxnMessage("west-dml_0_orders", 1000), row,
                           NewCommitTxnMessage("west-dml_0_orders", TxnId(100))}) {
    m.set_txn(txn);
    m.set_timetick(TimeTick(++ts));
    inner.push_back(std::make_shared<const ImmutableMessage>(
        MessageId(WalKind::kLocal, 0, ts), replicated(std::move(m), 600 + inner.size())));
  }
  ASSERT_TRUE(applier.Apply(*wal::TxnMessage::Assemble(std::move(inner))).ok());
  EXPECT_EQ(checkpoint_of(), 602u);
}

// Segments (docs/recovery-storage.md): a full growing segment asks once for its CreateSegment;
// applying it seals the segment and opens the next (id = its timetick); rows in sealed segments
// are still searched, got and deleted; the same log applied again draws the same boundaries.
TEST(ChannelApplierTest, ACreateSegmentSealsTheFullSegmentAndReplaysTheSame) {
  const std::string vc = "kf-dml_0_42v0";
  std::vector<std::string> requests;
  auto make = [&] {
    return std::make_unique<ChannelApplier>(
        "kf-dml_0", ShardOptions{.chunk_rows = 2, .seal_rows = 3},
        [&](const std::shared_ptr<Shard>& shard, const std::string& partition) {
          requests.push_back(shard->vchannel() + "/" + partition);
        });
  };
  std::vector<MutableMessage> log;
  uint64_t ts = 0;
  auto at = [&](MutableMessage m) {
    m.set_timetick(TimeTick(++ts));
    log.push_back(m);
    return ImmutableMessage(MessageId(), std::move(m));
  };
  auto applier = make();
  ASSERT_TRUE(applier->Apply(at(wal::testing::CreateCollection(vc, 42, 2, 1))).ok());
  ASSERT_TRUE(applier->Apply(at(NewInsertMessage(vc, Batch({1, 2}, 2, 0)))).ok());
  EXPECT_THAT(requests, IsEmpty());  // 2 rows < 3
  ASSERT_TRUE(applier->Apply(at(NewInsertMessage(vc, Batch({3}, 2, 2)))).ok());
  EXPECT_THAT(requests, ElementsAre(vc + "/_default"));
  ASSERT_TRUE(applier->Apply(at(NewInsertMessage(vc, Batch({4}, 2, 3)))).ok());
  EXPECT_EQ(requests.size(), 1u) << "asked once per segment";
  // The claim given back (the append failed): the next insert asks again.
  std::shared_ptr<Shard> shard = std::const_pointer_cast<Shard>(applier->shard(vc));
  shard->ReleaseSealClaim("_default");
  ASSERT_TRUE(applier->Apply(at(NewInsertMessage(vc, Batch({5}, 2, 4)))).ok());
  EXPECT_EQ(requests.size(), 2u);
  ASSERT_TRUE(applier->Apply(at(NewCreateSegmentMessage(vc, 42, "_default"))).ok());
  const uint64_t segment = ts;
  EXPECT_EQ(shard->sealed_segments(), 1u);
  EXPECT_EQ(shard->growing_segment_id("_default"), segment);
  ASSERT_TRUE(applier->Apply(at(NewInsertMessage(vc, Batch({6}, 2, 5)))).ok());
  ASSERT_TRUE(applier->Apply(at(NewDeleteMessage(vc, Pks({2, 6})))).ok());  // one per segment
  EXPECT_EQ(requests.size(), 2u);

  const float q[] = {0, 0};
  const uint64_t now = ts;
  EXPECT_THAT(PksOf(*shard->Search(q, 10, 0, {.ts = now}, std::nullopt)), ElementsAre(1, 3, 4, 5));
  EXPECT_THAT(PksOf(*shard->Search(q, 10, 0, {.ts = now - 1}, "_default")),
              ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_THAT(shard->Get(4, now), ElementsAre(ElementsAre(3.0f, 3.0f)));
  // A CreateSegment of a partition dropped since it was asked for does not bring it back.
  ASSERT_TRUE(
      applier->Apply(at(wal::testing::PartitionDdl(MessageType::kCreatePartition, vc, 42, "p1", 2)))
          .ok());
  ASSERT_TRUE(
      applier->Apply(at(wal::testing::PartitionDdl(MessageType::kDropPartition, vc, 42, "p1", 3)))
          .ok());
  ASSERT_TRUE(applier->Apply(at(NewCreateSegmentMessage(vc, 42, "p1"))).ok());
  EXPECT_EQ(shard->growing_segment_id("p1"), std::nullopt);

  // Replayed: the same boundaries, rows and answers.
  auto again = make();
  for (const MutableMessage& m : log) {
    ASSERT_TRUE(again->Apply(ImmutableMessage(MessageId(), MutableMessage(m))).ok());
  }
  auto replayed = again->shard(vc);
  EXPECT_EQ(replayed->sealed_segments(), 1u);
  EXPECT_EQ(replayed->growing_segment_id("_default"), segment);
  EXPECT_EQ(replayed->rows(), shard->rows());
  EXPECT_THAT(PksOf(*replayed->Search(q, 10, 0, {.ts = now}, std::nullopt)),
              ElementsAre(1, 3, 4, 5));
}

// The other seal policies (docs/recovery-storage.md): bytes at Insert; lifetime and idle time on
// the timeticks of a segment's rows, asked once per segment; a ManualFlush seals every
// partition holding rows where it is applied, and replays the same.
TEST(ChannelApplierTest, SegmentsSealByBytesAgeAndIdleTimeAndAManualFlushSealsEveryPartition) {
  const std::string vc = "kf-dml_0_42v0";
  std::vector<std::string> requests;
  auto make = [&](ShardOptions options) {
    return std::make_unique<ChannelApplier>(
        "kf-dml_0", options, [&](const std::shared_ptr<Shard>& shard, const std::string& p) {
          requests.push_back(shard->vchannel() + "/" + p);
        });
  };
  std::vector<MutableMessage> log;
  uint64_t logical = 0;
  auto at = [&](uint64_t ms, MutableMessage m) {
    m.set_timetick(ComposeTimeTick(ms, ++logical));
    log.push_back(m);
    return ImmutableMessage(MessageId(), std::move(m));
  };
  constexpr uint64_t t0 = 1'800'000'000'000;  // unix ms
  auto applier = make({.chunk_rows = 2,
                       .seal_bytes = 1,  // any row fills it
                       .seal_lifetime = absl::Seconds(60),
                       .seal_idle = absl::Seconds(10)});
  ASSERT_TRUE(applier->Apply(at(t0, wal::testing::CreateCollection(vc, 42, 2, 1))).ok());
  ASSERT_TRUE(applier->Apply(at(t0 + 1, NewInsertMessage(vc, Batch({1}, 2, 0)))).ok());
  EXPECT_THAT(requests, ElementsAre(vc + "/_default")) << "full by bytes";
  requests.clear();

  // By age: nothing before either bound, the partition once after.
  applier =
      make({.chunk_rows = 2, .seal_lifetime = absl::Seconds(60), .seal_idle = absl::Seconds(10)});
  ASSERT_TRUE(applier->Apply(at(t0, wal::testing::CreateCollection(vc, 42, 2, 1))).ok());
  ASSERT_TRUE(applier
                  ->Apply(at(t0, wal::testing::PartitionDdl(MessageType::kCreatePartition, vc, 42,
                                                            "p1", 2)))
                  .ok());
  EXPECT_THAT(applier->ClaimAgedSeals(t0 + 3'600'000), IsEmpty()) << "empty segments never";
  for (uint64_t s = 0; s <= 55; s += 5) {  // a row every 5 s: never idle for 10 s
    ASSERT_TRUE(applier->Apply(at(t0 + s * 1000, NewInsertMessage(vc, Batch({1}, 2, 0)))).ok());
    EXPECT_THAT(applier->ClaimAgedSeals(t0 + s * 1000 + 4999), IsEmpty()) << s;
  }
  auto claimed = applier->ClaimAgedSeals(t0 + 60'000);  // 60 s after the first row
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].second, "_default");
  EXPECT_THAT(applier->ClaimAgedSeals(t0 + 120'000), IsEmpty()) << "claimed once";
  kingfisher::v1::InsertBatch b = Batch({2}, 2, 0);
  b.set_partition("p1");
  ASSERT_TRUE(applier->Apply(at(t0 + 61'000, NewInsertMessage(vc, b))).ok());
  EXPECT_THAT(applier->ClaimAgedSeals(t0 + 70'999), IsEmpty());
  claimed = applier->ClaimAgedSeals(t0 + 71'000);  // idle for 10 s
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].second, "p1");

  // A ManualFlush seals both partitions (each its own segment, ids = the flush's timetick).
  std::shared_ptr<const Shard> shard = applier->shard(vc);
  const uint64_t opened = applier->segments_opened();
  MutableMessage flush(MessageType::kManualFlush, "");
  flush.set_vchannel(vc);
  ASSERT_TRUE(applier->Apply(at(t0 + 80'000, wal::testing::Broadcast(std::move(flush), 3))).ok());
  const uint64_t flush_ts = ComposeTimeTick(t0 + 80'000, logical).value();
  EXPECT_EQ(applier->segments_opened(), opened + 1) << "a checkpoint is due at once";
  EXPECT_EQ(shard->sealed_segments(), 2u);
  EXPECT_EQ(shard->growing_segment_id("_default"), flush_ts);
  EXPECT_EQ(shard->growing_segment_id("p1"), flush_ts);
  EXPECT_THAT(applier->ClaimAgedSeals(t0 + 3'600'000), IsEmpty()) << "the new ones are empty";
  const float q[] = {0, 0};
  EXPECT_EQ(shard->Search(q, 20, 0, {.ts = flush_ts}, std::nullopt)->size(), 13u);

  // Replayed: the same segments.
  auto again = make({.chunk_rows = 2});
  for (const MutableMessage& m : log) {
    ASSERT_TRUE(again->Apply(ImmutableMessage(MessageId(), MutableMessage(m))).ok());
  }
  EXPECT_EQ(again->shard(vc)->sealed_segments(), 2u);
  EXPECT_EQ(again->shard(vc)->growing_segment_id("p1"), flush_ts);
}

// --- The model test: random histories appended to a real WAL, followed by a ChannelFollower,
// searched at random timestamps and compared with an exact search over a model of the rows.

constexpr char kPchannel[] = "kf-dml_0";
constexpr uint32_t kDim = 6;

struct ModelRow {
  int64_t pk;
  std::vector<float> stored;  // as the segment keeps it (normalised for COSINE)
  std::string partition;
  uint64_t inserted;
  uint64_t deleted = search::kNotDeleted;
};

struct ModelShard {
  search::Metric metric;
  std::vector<ModelRow> rows;
  bool dropped = false;
};

// A STRONG search of `vc` for the vector (0.5, ..., 0.5).
kingfisher::v1::SearchRequest StrongSearch(const std::string& vc, uint32_t topk) {
  kingfisher::v1::SearchRequest r;
  r.set_vchannel(vc);
  r.set_dim(kDim);
  for (uint32_t d = 0; d < kDim; ++d) r.add_vectors(0.5f);
  r.set_topk(topk);
  r.set_consistency(kingfisher::v1::STRONG);
  return r;
}

class QueryModelTest : public ::testing::TestWithParam<BackendKind> {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kf-query-" + std::to_string(::getpid()) + "-" + wal::testing::BackendName(GetParam()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    tso_ = *TimestampAllocator::Open((dir_ / "tso").string(), {});
    // Small segments, so truncation below a checkpoint reclaims some (the memory log keeps all).
    log_ = std::make_unique<wal::testing::BackendUnderTest>(GetParam(), dir_, kPchannel, 4096);
    if (objects_ == nullptr) {  // a derived fixture may bring its own store
      objects_ =
          *object::LocalObjectStore::Open(fs::DefaultFileSystem(), (dir_ / "objects").string());
    }
    meta_ = *meta::EmbeddedMetaStore::Open((dir_ / "meta").string(), {});
    recovery_ = RecoveryStorageOptions{.objects = objects_.get(),
                                       .meta = meta_.get(),
                                       .meta_prefix = "checkpoints/",
                                       .object_prefix = object_prefix_,
                                       .checkpoint_interval = absl::Milliseconds(1),
                                       .io_timeout = io_timeout_,
                                       .wal_retention = absl::ZeroDuration(),
                                       .spill_dir = (dir_ / "spill").string()};
    std::filesystem::create_directories(dir_ / "spill");
    Reopen();
  }
  void TearDown() override {
    follower_.reset();
    if (wal_) wal_->Close();
    wal_.reset();
    std::filesystem::remove_all(dir_);
  }

  // The pchannel's owner restarts (or the pchannel moves): a new WAL at a higher term and a
  // follower that rebuilds every shard from the log.
  void Reopen() {
    follower_.reset();
    if (wal_) wal_->Close();
    wal_.reset();
    term_ = Term(term_.value() + 1);
    auto backend = log_->Open(term_);
    ASSERT_TRUE(backend.ok()) << backend.status();
    // The WAL opens from the checkpoint's copy of its state, as a server's does.
    wal_ = std::make_shared<wal::WalImpl>(
        wal::WalOptions{
            .pchannel = kPchannel,
            .tso = tso_.get(),
            .load_checkpoint = [this](const std::string& p) { return LoadWalState(recovery_, p); },
            .admit_inserts = admit_inserts_},
        *std::move(backend));
    ASSERT_TRUE(wal_->Recover().ok());
    // Small segments: the follower appends CreateSegments as they fill (every check below
    // searches sealed and growing segments together), and checkpoints after every drain.
    auto follower = ChannelFollower::Start(wal_, shard_options_, absl::Milliseconds(50), &recovery_,
                                           nullptr, prefetch_);
    ASSERT_TRUE(follower.ok()) << follower.status();
    follower_ = *std::move(follower);
  }

  // The followers' shard options from the next Reopen on.
  ShardOptions shard_options_{.chunk_rows = 16, .seal_rows = 40};
  // The checkpoint as loaded ahead of the next Reopen (null: none).
  CheckpointPrefetch* prefetch_ = nullptr;

  // Waits until a checkpoint covers everything applied now.
  void AwaitCheckpoint() {
    const uint64_t ts = follower_->applier().tsafe();
    ASSERT_TRUE(kf::testing::WaitUntil(
        [&] { return follower_->checkpoint_stats().committed_ts >= ts; }, absl::Seconds(30)))
        << follower_->checkpoint_stats().last_error;
  }

  // Ten random Inserts into `vc` (at most 40 rows, no more than seal_rows: only a flush seals
  // them); returns how many rows.
  size_t InsertBelowSealRows(const std::string& vc) {
    size_t rows = 0;
    for (int i = 0; i < 10; ++i) {
      std::vector<ModelRow> batch;
      MutableMessage m = RandomInsert(vc, &batch);
      rows += batch.size();
      ModelInsert(vc, std::move(batch), Append(std::move(m)));
    }
    return rows;
  }

  // What the shards hold in memory (ShardStats::memory_bytes, without indexes).
  size_t ShardBytes() const {
    size_t n = 0;
    for (const auto& shard : follower_->applier().shards()) n += shard->memory_bytes();
    return n;
  }

  // Sealed segments of every shard, and those of them flushed to the object store.
  size_t Sealed() const {
    size_t n = 0;
    for (const auto& shard : follower_->applier().shards()) n += shard->sealed_segments();
    return n;
  }
  size_t Flushed() const {
    size_t n = 0;
    for (const auto& shard : follower_->applier().shards()) n += shard->flushed_segments();
    return n;
  }

  // The WAL's Insert gate from the next Reopen on (WalOptions::admit_inserts).
  std::function<absl::Status()> admit_inserts_;

  // Reopens the WAL with `registry`'s AdmitInsert as its Insert gate, followed by `registry`.
  void OpenGatedBy(const std::shared_ptr<QueryRegistry>& registry) {
    // Weak: the registry holds the WAL, whose options hold this gate.
    admit_inserts_ = [weak = std::weak_ptr<QueryRegistry>(registry)] {
      auto r = weak.lock();
      return r == nullptr ? absl::OkStatus() : r->AdmitInsert();
    };
    Reopen();
    registry->Follow(wal_);
  }

  uint64_t Append(MutableMessage m, std::optional<kingfisher::v1::TxnContext>* txn = nullptr) {
    auto r = wal_->AppendSync({}, std::move(m));
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return 0;
    if (!first_id_.valid()) first_id_ = r->id;
    if (txn != nullptr) *txn = r->txn;
    acked_.push_back(r->timetick.value());
    return r->timetick.value();
  }

  void CreateCollection(const std::string& vc, int64_t id, search::Metric metric) {
    MutableMessage m = wal::testing::CreateCollection(vc, id, kDim, next_broadcast_++);
    if (metric != search::Metric::kL2) {
      auto schema = *DecodeCollectionSchema(m.payload());
      schema.set_metric(metric == search::Metric::kIP ? kingfisher::v1::IP
                                                      : kingfisher::v1::COSINE);
      MutableMessage with(MessageType::kCreateCollection, schema.SerializeAsString());
      with.set_vchannel(vc);
      m = wal::testing::Broadcast(std::move(with), next_broadcast_++);
    }
    Append(std::move(m));
    model_[vc] = ModelShard{.metric = metric};
  }

  // A ManualFlush of `vc` (what `kfctl flush` broadcasts): returns its timetick.
  uint64_t ManualFlush(const std::string& vc) {
    MutableMessage m(MessageType::kManualFlush, "");
    m.set_vchannel(vc);
    return Append(wal::testing::Broadcast(std::move(m), next_broadcast_++));
  }

  std::vector<float> RandomVector() {
    std::normal_distribution<float> d(0, 1);
    std::vector<float> v(kDim);
    for (float& x : v) x = d(rng_);
    return v;
  }

  // An Insert of 1-4 rows with pks from a small range (so deletes and re-inserts meet).
  MutableMessage RandomInsert(const std::string& vc, std::vector<ModelRow>* rows) {
    kingfisher::v1::InsertBatch b;
    b.set_dim(kDim);
    const std::string partition = vc == kVc0 && Chance(0.4) ? "p1" : "";
    b.set_partition(partition);
    const int n = std::uniform_int_distribution<int>(1, 4)(rng_);
    for (int i = 0; i < n; ++i) {
      const int64_t pk = std::uniform_int_distribution<int64_t>(0, 60)(rng_);
      std::vector<float> v = RandomVector();
      b.add_pks(pk);
      for (float x : v) b.add_vectors(x);
      if (model_[vc].metric == search::Metric::kCosine) search::Normalize(v.data(), kDim);
      rows->push_back({pk, v, partition.empty() ? "_default" : partition, 0});
    }
    return NewInsertMessage(vc, b);
  }

  std::vector<int64_t> RandomDeletePks() {
    std::vector<int64_t> pks;
    const int n = std::uniform_int_distribution<int>(1, 3)(rng_);
    for (int i = 0; i < n; ++i) pks.push_back(std::uniform_int_distribution<int64_t>(0, 60)(rng_));
    return pks;
  }

  void ModelInsert(const std::string& vc, std::vector<ModelRow> rows, uint64_t ts) {
    for (ModelRow& r : rows) {
      r.inserted = ts;
      model_[vc].rows.push_back(std::move(r));
    }
  }
  void ModelDelete(const std::string& vc, const std::vector<int64_t>& pks, uint64_t ts) {
    for (int64_t pk : pks) {
      for (ModelRow& r : model_[vc].rows) {
        if (r.pk == pk && r.deleted == search::kNotDeleted) r.deleted = ts;
      }
    }
  }

  bool Chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }

  // One step of the history.
  void Step() {
    const std::string vc = Chance(0.5) ? kVc0 : (Chance(0.5) ? kVc1 : kVcCos);
    const double dice = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (dice < 0.02) {
      ManualFlush(vc);
    } else if (dice < 0.45) {
      std::vector<ModelRow> rows;
      MutableMessage m = RandomInsert(vc, &rows);
      ModelInsert(vc, std::move(rows), Append(std::move(m)));
    } else if (dice < 0.65) {
      const std::vector<int64_t> pks = RandomDeletePks();
      ModelDelete(vc, pks, Append(NewDeleteMessage(vc, Pks(pks))));
    } else {
      // A transaction of inserts and deletes: applied at its commit, or never.
      std::optional<kingfisher::v1::TxnContext> txn;
      Append(NewBeginTxnMessage(vc, 60000), &txn);
      ASSERT_TRUE(txn.has_value());
      struct Body {
        std::vector<ModelRow> rows;
        std::vector<int64_t> deleted;
      };
      std::vector<Body> bodies;
      const int n = std::uniform_int_distribution<int>(1, 4)(rng_);
      for (int i = 0; i < n; ++i) {
        Body body;
        MutableMessage m = Chance(0.7)
                               ? RandomInsert(vc, &body.rows)
                               : NewDeleteMessage(vc, Pks(body.deleted = RandomDeletePks()));
        m.set_txn(*txn);
        Append(std::move(m));
        bodies.push_back(std::move(body));
      }
      if (Chance(0.3)) {
        Append(NewRollbackTxnMessage(vc, TxnId(txn->txn_id())));
        return;
      }
      const uint64_t commit = Append(NewCommitTxnMessage(vc, TxnId(txn->txn_id())));
      for (Body& b : bodies) {
        if (!b.rows.empty()) ModelInsert(vc, std::move(b.rows), commit);
        if (!b.deleted.empty()) ModelDelete(vc, b.deleted, commit);
      }
    }
  }

  // Searches every shard at `ts` with random queries and compares with the model.
  void Check(uint64_t ts) {
    // A TimeTick on demand: the last acked message may be one no reader receives (a rollback,
    // a txn's Begin), and nothing else would move the tSafe past it.
    follower_->Want(ts);
    if (follower_->applier().tsafe() < ts) wal_->SyncTimeTick();
    ASSERT_TRUE(follower_->applier().AwaitTSafe(ts, absl::Now() + absl::Seconds(30)))
        << "tSafe stuck at " << follower_->applier().tsafe() << " below " << ts << ": "
        << follower_->status();
    for (const auto& [vc, model] : model_) {
      std::shared_ptr<const Shard> shard = follower_->applier().shard(vc);
      if (model.dropped) {
        EXPECT_EQ(shard, nullptr) << vc;
        continue;
      }
      ASSERT_NE(shard, nullptr) << vc;
      for (int q = 0; q < 3; ++q) {
        std::vector<float> query = RandomVector();
        std::optional<std::string> partition;
        if (vc == kVc0 && q == 1) partition = "p1";
        search::SearchFilter filter{.ts = ts};
        if (q == 2) {
          filter.min_pk = 10;
          filter.max_pk = 40;
        }
        std::vector<float> stored = query;
        if (model.metric == search::Metric::kCosine) search::Normalize(stored.data(), kDim);
        search::TopK want(7);
        for (const ModelRow& r : model.rows) {
          if (r.inserted > ts || ts >= r.deleted) continue;
          if (r.pk < filter.min_pk || r.pk > filter.max_pk) continue;
          if (partition && r.partition != *partition) continue;
          want.Push({search::Score(model.metric, stored.data(), r.stored.data(), kDim), r.pk});
        }
        auto got = shard->Search(query.data(), 7, 0, filter, partition);
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_EQ(*got, want.Take()) << vc << " at " << ts << " query " << q;
      }
      // Get finds exactly the model's visible rows of a pk.
      const int64_t pk = std::uniform_int_distribution<int64_t>(0, 60)(rng_);
      std::vector<std::vector<float>> want_rows;
      for (const ModelRow& r : model.rows) {
        if (r.pk == pk && r.inserted <= ts && ts < r.deleted) want_rows.push_back(r.stored);
      }
      std::vector<std::vector<float>> got_rows = shard->Get(pk, ts);
      std::sort(got_rows.begin(), got_rows.end());
      std::sort(want_rows.begin(), want_rows.end());
      EXPECT_EQ(got_rows, want_rows) << vc << " pk " << pk << " at " << ts;
    }
    ++checks_;
  }

  uint64_t RandomAcked() {
    return acked_[std::uniform_int_distribution<size_t>(0, acked_.size() - 1)(rng_)];
  }

  const std::string kVc0 = "kf-dml_0_42v0";
  const std::string kVc1 = "kf-dml_0_42v1";
  const std::string kVcCos = "kf-dml_0_43v0";
  std::mt19937 rng_{42};
  std::filesystem::path dir_;
  std::unique_ptr<TimestampAllocator> tso_;
  std::unique_ptr<wal::testing::BackendUnderTest> log_;
  std::unique_ptr<object::ObjectStore> objects_;
  std::string object_prefix_;
  absl::Duration io_timeout_ = absl::Seconds(30);
  std::unique_ptr<meta::EmbeddedMetaStore> meta_;
  RecoveryStorageOptions recovery_;
  Term term_{0};
  std::shared_ptr<wal::WalImpl> wal_;
  std::unique_ptr<ChannelFollower> follower_;
  std::map<std::string, ModelShard> model_;
  std::vector<uint64_t> acked_;
  MessageId first_id_;
  uint64_t next_broadcast_ = 1;
  int checks_ = 0;
};

TEST_P(QueryModelTest, EverySearchEqualsTheExactAnswerOverTheModelAtItsTimestamp) {
  CreateCollection(kVc0, 42, search::Metric::kL2);
  CreateCollection(kVc1, 42, search::Metric::kL2);
  CreateCollection(kVcCos, 43, search::Metric::kCosine);
  Append(
      wal::testing::PartitionDdl(MessageType::kCreatePartition, kVc0, 42, "p1", next_broadcast_++));
  // Restarts mid-history: from a checkpoint covering everything applied (its flushed segments
  // loaded, the log replayed from its replay_from), and from whatever checkpoint was last
  // committed while the appends went on.
  for (int step = 0; step < 250 && !HasFatalFailure(); ++step) {
    Step();
    if (step % 10 == 9) Check(Chance(0.5) ? acked_.back() : RandomAcked());
    if (step == 119 || step == 199) {
      if (step == 119) AwaitCheckpoint();
      Reopen();
      const ChannelFollower::CheckpointStats loaded = follower_->checkpoint_stats();
      EXPECT_GT(loaded.loaded_ts, 0u) << "step " << step;
      EXPECT_GT(loaded.loaded_segments, 0u) << "step " << step;
      EXPECT_GT(loaded.loaded_replay_from, first_id_) << "replayed from the start";
      Check(acked_.back());
    }
  }
  // A dropped collection's shard is released.
  Append(wal::testing::DropCollection(kVcCos, 43, next_broadcast_++));
  model_[kVcCos].dropped = true;
  const uint64_t last = acked_.back();
  Check(last);

  EXPECT_GT(Sealed(), 0u) << "no growing segment was sealed";

  // Every checkpoint let the WAL below its replay_from go (retention 0).
  AwaitCheckpoint();
  const ChannelFollower::CheckpointStats before = follower_->checkpoint_stats();
  EXPECT_GT(before.truncations, 0u);

  // A restart rebuilds every shard from its checkpoint and the log: the same answers at every
  // timestamp the log holds.
  Reopen();
  for (int i = 0; i < 10 && !HasFatalFailure(); ++i) Check(i == 0 ? last : RandomAcked());
  EXPECT_GT(Sealed(), 0u) << "the replay drew no segment boundary";
  EXPECT_TRUE(follower_->status().ok()) << follower_->status();
  EXPECT_GT(follower_->applier().memory_bytes(), 0u);
  EXPECT_GT(follower_->applier().rows(), 0u);
  EXPECT_GT(checks_, 30);

  // What was truncated is not read silently: OUT_OF_RANGE naming where the log now starts.
  if (GetParam() == BackendKind::kLocal) {
    absl::Status read;
    auto scanner = wal_->Read(wal::ScanOptions{
        .policy = {.kind = wal::DeliverPolicy::Kind::kStartFrom, .id = first_id_}});
    if (!scanner.ok()) {
      read = scanner.status();
    } else {
      read = (*scanner)->Next({}, absl::Now() + absl::Seconds(5)).status();
    }
    EXPECT_EQ(read.code(), absl::StatusCode::kOutOfRange) << read;
    EXPECT_THAT(std::string(read.message()), ::testing::HasSubstr("earliest readable id is"));
  }
}

// A segment object that is corrupt, truncated or missing is reported naming it (DATA_LOSS, or
// the store's NOT_FOUND), never loaded silently; put back, the pchannel recovers.
TEST_P(QueryModelTest, ACorruptOrMissingSegmentObjectFailsRecoveryNamingIt) {
  CreateCollection(kVc1, 42, search::Metric::kL2);
  for (int i = 0; i < 30; ++i) {
    std::vector<ModelRow> rows;
    MutableMessage m = RandomInsert(kVc1, &rows);
    ModelInsert(kVc1, std::move(rows), Append(std::move(m)));
  }
  Check(acked_.back());
  ASSERT_TRUE(kf::testing::WaitUntil(
      [&] {
        return follower_->checkpoint_stats().commits > 0 &&
               follower_->applier().shard(kVc1)->flushed_segments() > 0;
      },
      absl::Seconds(30)));
  AwaitCheckpoint();
  follower_.reset();

  auto listed =
      objects_->List("segments/", "", object::ObjectStore::kNoLimit, absl::InfiniteFuture());
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::string key;
  for (const auto& o : listed->objects) {
    if (absl::EndsWith(o.key, ".seg")) key = o.key;
  }
  ASSERT_FALSE(key.empty());
  const std::string good = *objects_->Get(key, object::ByteRange::All(), absl::InfiniteFuture());
  auto start = [&] {
    return ChannelFollower::Start(wal_, {.chunk_rows = 16, .seal_rows = 40}, absl::Milliseconds(50),
                                  &recovery_);
  };
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x20;
  for (const std::string& bad : {flipped, good.substr(0, good.size() - 7)}) {
    ASSERT_TRUE(objects_->Put(key, bad, {}, absl::InfiniteFuture()).ok());
    auto failed = start();
    EXPECT_EQ(failed.status().code(), absl::StatusCode::kDataLoss) << failed.status();
    EXPECT_THAT(std::string(failed.status().message()), ::testing::HasSubstr(key));
  }
  ASSERT_TRUE(objects_->Delete(key, absl::InfiniteFuture()).ok());
  auto missing = start();
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound) << missing.status();
  EXPECT_THAT(std::string(missing.status().message()), ::testing::HasSubstr(key));

  ASSERT_TRUE(objects_->Put(key, good, {}, absl::InfiniteFuture()).ok());
  auto recovered = start();
  ASSERT_TRUE(recovered.ok()) << recovered.status();
  follower_ = *std::move(recovered);
  EXPECT_GT(follower_->checkpoint_stats().loaded_segments, 0u);
  Check(acked_.back());
}

// A partition that stays empty while the WAL is truncated past its creation (checkpoints
// advance over it) gets rows later: its checkpoint must not ask for the log from its creation,
// which is gone — the restart still recovers every row.
TEST_P(QueryModelTest, APartitionEmptyWhileTheLogIsTruncatedRecoversItsLaterRows) {
  CreateCollection(kVc0, 42, search::Metric::kL2);
  Append(
      wal::testing::PartitionDdl(MessageType::kCreatePartition, kVc0, 42, "p1", next_broadcast_++));
  auto insert = [&](int64_t pk, const std::string& partition) {
    kingfisher::v1::InsertBatch b = Batch({pk}, kDim, static_cast<float>(pk), partition);
    std::vector<float> v(b.vectors().begin(), b.vectors().end());
    ModelInsert(kVc0, {{pk, v, partition, 0}}, Append(NewInsertMessage(kVc0, b)));
  };
  // _default fills and seals segments; each seal is checkpointed and truncates the log.
  for (int64_t pk = 0; pk < 200; ++pk) {
    insert(pk, "_default");
    if (pk % 20 == 19) {
      Check(acked_.back());
      AwaitCheckpoint();
    }
  }
  if (GetParam() == BackendKind::kLocal) {
    EXPECT_GT(follower_->checkpoint_stats().truncations, 0u);
  }
  insert(1000, "p1");
  Check(acked_.back());
  AwaitCheckpoint();
  Reopen();
  EXPECT_TRUE(follower_->status().ok()) << follower_->status();
  Check(acked_.back());
}

// After a commit the writer deletes the pchannel's objects no checkpoint names — the orphans of
// flushes that never committed, written at its term or an older one — but not a newer owner's,
// which a checkpoint committed after its own may name.
TEST_P(QueryModelTest, GarbageCollectionDeletesOrphansOfThisTermOrOlderOnly) {
  const std::string dir = "segments/kf-dml_0/kf-dml_0_42v1/_default/";
  const std::string older = dir + "5.t0-0000abcd.seg";
  const std::string mine = dir + "6.t" + std::to_string(term_.value()) + "-0000abcd.del.7";
  const std::string newer = dir + "7.t999-0000abcd.seg";
  for (const std::string& key : {older, mine, newer}) {
    ASSERT_TRUE(objects_->Put(key, "orphan", {}, absl::InfiniteFuture()).ok());
  }
  CreateCollection(kVc1, 42, search::Metric::kL2);
  Check(acked_.back());
  AwaitCheckpoint();
  const uint64_t commits = follower_->checkpoint_stats().commits;
  std::vector<ModelRow> rows;
  MutableMessage m = RandomInsert(kVc1, &rows);
  ModelInsert(kVc1, std::move(rows), Append(std::move(m)));
  Check(acked_.back());
  ASSERT_TRUE(kf::testing::WaitUntil(
      [&] { return follower_->checkpoint_stats().commits > commits; }, absl::Seconds(30)));
  EXPECT_TRUE(absl::IsNotFound(objects_->Head(older, absl::InfiniteFuture()).status()));
  EXPECT_TRUE(absl::IsNotFound(objects_->Head(mine, absl::InfiniteFuture()).status()));
  EXPECT_TRUE(objects_->Head(newer, absl::InfiniteFuture()).ok());
}

// A ManualFlush seals every partition holding rows where it is applied; the checkpoint that
// covers it names them flushed, holding every row inserted before it, and a restart loads them.
TEST_P(QueryModelTest, AManualFlushPutsEveryEarlierRowInAFlushedSegment) {
  CreateCollection(kVc0, 42, search::Metric::kL2);
  Append(
      wal::testing::PartitionDdl(MessageType::kCreatePartition, kVc0, 42, "p1", next_broadcast_++));
  size_t inserted = 0;
  std::set<std::string> partitions;
  for (int i = 0; i < 8; ++i) {  // at most 32 rows, fewer than seal_rows: only the flush seals
    std::vector<ModelRow> rows;
    MutableMessage m = RandomInsert(kVc0, &rows);
    inserted += rows.size();
    for (const ModelRow& r : rows) partitions.insert(r.partition);
    ModelInsert(kVc0, std::move(rows), Append(std::move(m)));
  }
  const uint64_t flush = ManualFlush(kVc0);
  Check(flush);
  ASSERT_TRUE(kf::testing::WaitUntil(
      [&] { return follower_->checkpoint_stats().committed_ts >= flush; }, absl::Seconds(30)));
  auto got = meta_->Get("checkpoints/" + std::string(kPchannel), absl::InfiniteFuture());
  ASSERT_TRUE(got.ok()) << got.status();
  kingfisher::v1::PChannelCheckpoint c;
  ASSERT_TRUE(c.ParseFromString(got->kv.value));
  ASSERT_EQ(c.shards_size(), 1);
  size_t flushed_rows = 0;
  for (const auto& p : c.shards(0).partitions()) {
    EXPECT_EQ(p.growing_id(), flush) << p.name();
    for (const auto& f : p.flushed()) {
      flushed_rows += f.rows();
      EXPECT_TRUE(objects_->Head(f.object(), absl::InfiniteFuture()).ok()) << f.object();
    }
  }
  EXPECT_EQ(flushed_rows, inserted);
  Reopen();
  EXPECT_EQ(follower_->checkpoint_stats().loaded_segments, partitions.size());
  Check(flush);
  Check(acked_.back());
}

// Once flushed, a sealed segment is served from its object (docs/recovery-storage.md): the
// local store maps it, so the node's memory keeps only its delete column, row maps and pk index
// instead of its rows and their index copies; gets, deletes and searches answer as before, and
// after a restart.
TEST_P(QueryModelTest, AFlushedSegmentIsServedFromItsObjectInsteadOfMemory) {
  CreateCollection(kVc1, 42, search::Metric::kL2);
  const size_t rows = InsertBelowSealRows(kVc1);
  Check(acked_.back());
  const size_t row_bytes = rows * search::Chunk::BytesPerRow(kDim);
  EXPECT_GE(ShardBytes(), row_bytes) << "in memory before the flush";
  const uint64_t flush = ManualFlush(kVc1);
  ASSERT_TRUE(kf::testing::WaitUntil(
      [&] { return follower_->checkpoint_stats().committed_ts >= flush; }, absl::Seconds(30)));
  EXPECT_EQ(Flushed(), 1u);
  EXPECT_LT(ShardBytes(), row_bytes) << "still in memory after the flush";
  Check(flush);
  for (int i = 0; i < 5; ++i) {
    const std::vector<int64_t> pks = RandomDeletePks();
    ModelDelete(kVc1, pks, Append(NewDeleteMessage(kVc1, Pks(pks))));
  }
  Check(acked_.back());
  // A load no longer wanted (its WAL reopened at a newer term meanwhile) stops, CANCELLED.
  auto cancelled = LoadCheckpoint(recovery_, kPchannel, shard_options_, [] { return true; });
  EXPECT_TRUE(absl::IsCancelled(cancelled.status())) << cancelled.status();
  Reopen();
  Check(acked_.back());
}

// A checkpoint loaded ahead of the WAL's open (CheckpointPrefetch, as a node loads it while it
// opens the WAL) is handed over once, and only while it is still the pchannel's checkpoint: after
// a newer commit (the previous owner's, before the open fenced it) the follower loads that one.
TEST_P(QueryModelTest, APrefetchedCheckpointIsUsedOnlyWhileItIsCurrent) {
  CreateCollection(kVc1, 42, search::Metric::kL2);
  const auto insert_and_flush = [&] {
    for (int i = 0; i < 5; ++i) {  // at most 20 rows, fewer than seal_rows: only the flush seals
      std::vector<ModelRow> batch;
      MutableMessage m = RandomInsert(kVc1, &batch);
      ModelInsert(kVc1, std::move(batch), Append(std::move(m)));
    }
    const uint64_t flush = ManualFlush(kVc1);
    ASSERT_TRUE(kf::testing::WaitUntil(
        [&] { return follower_->checkpoint_stats().committed_ts >= flush; }, absl::Seconds(30)));
  };
  insert_and_flush();
  {
    CheckpointPrefetch current(recovery_, kPchannel, shard_options_);
    auto taken = current.Take(nullptr);
    ASSERT_TRUE(taken.ok()) << taken.status();
    ASSERT_TRUE(taken->has_value());
    EXPECT_EQ((*taken)->segments, 1u);
    EXPECT_TRUE(current.taken());
    auto again = current.Take(nullptr);
    EXPECT_TRUE(absl::IsFailedPrecondition(again.status())) << again.status();
  }
  CheckpointPrefetch stale(recovery_, kPchannel, shard_options_);
  stale.WaitLoaded();
  insert_and_flush();  // a second flushed segment, in a newer checkpoint
  auto refused = stale.Take(nullptr);
  EXPECT_TRUE(absl::IsAborted(refused.status())) << refused.status();
  EXPECT_TRUE(stale.settled());
  prefetch_ = &stale;
  Reopen();
  EXPECT_FALSE(stale.taken());
  EXPECT_EQ(follower_->checkpoint_stats().loaded_segments, 2u);
  Check(acked_.back());

  follower_.reset();  // its commits would make any prefetch stale (rightly)
  CheckpointPrefetch current(recovery_, kPchannel, shard_options_);
  prefetch_ = &current;
  Reopen();
  prefetch_ = nullptr;
  EXPECT_TRUE(current.taken());
  EXPECT_EQ(follower_->checkpoint_stats().loaded_segments, 2u);
  Check(acked_.back());

  // Through the registry, as a node uses it: Prefetch when it learns the assignment (once per
  // pchannel), Follow once the WAL is open; the follower takes the prefetch and the registry
  // lets go of it. DropPrefetch drops one nobody took.
  auto registry = std::make_shared<QueryRegistry>(
      QueryRegistryOptions{.shard = shard_options_, .tso = tso_.get(), .recovery = recovery_});
  follower_.reset();
  registry->Prefetch(kPchannel);
  registry->Prefetch(kPchannel);
  EXPECT_EQ(registry->prefetches(), 1u);
  Reopen();
  follower_.reset();  // the registry's follower instead
  registry->Follow(wal_);
  const auto loaded = [&] {
    const auto stats = registry->Stats();
    return stats.size() == 1 && stats[0].checkpoint.loaded_segments == 2;
  };
  ASSERT_TRUE(kf::testing::WaitUntil(loaded, absl::Seconds(30)));
  EXPECT_EQ(registry->prefetches(), 0u);
  auto found = registry->Search(StrongSearch(kVc1, 10), absl::Now() + absl::Seconds(30));
  EXPECT_TRUE(found.ok()) << found.status();
  registry->Prefetch("kf-dml_9");
  EXPECT_EQ(registry->prefetches(), 1u);
  registry->DropPrefetch("kf-dml_9");
  EXPECT_EQ(registry->prefetches(), 0u);
  registry->Unfollow(kPchannel);
}

// Under memory pressure the follower seals its largest growing segment of at least a chunk,
// though no size or age policy would, and goes on while the pressure eases; flushed, those rows
// are served from their objects.
TEST_P(QueryModelTest, MemoryPressureSealsTheLargestGrowingSegmentFirst) {
  auto pressure = std::make_shared<std::atomic<MemoryPressure>>(MemoryPressure::kLow);
  shard_options_.seal_rows = 0;
  shard_options_.memory_pressure = [pressure] { return pressure->load(); };
  Reopen();
  CreateCollection(kVc0, 42, search::Metric::kL2);  // two shards of one collection
  CreateCollection(kVc1, 42, search::Metric::kL2);
  Append(
      wal::testing::PartitionDdl(MessageType::kCreatePartition, kVc0, 42, "p1", next_broadcast_++));
  const auto insert = [&](const std::string& vc, int64_t pk, size_t n) {
    std::vector<int64_t> pks(n);
    std::iota(pks.begin(), pks.end(), pk);
    std::vector<ModelRow> rows;  // Batch's vectors: row i all base + i
    const auto base = static_cast<float>(pk);
    for (size_t i = 0; i < n; ++i) {
      rows.push_back(
          {pks[i], std::vector<float>(kDim, base + static_cast<float>(i)), "_default", 0});
    }
    ModelInsert(vc, std::move(rows), Append(NewInsertMessage(vc, Batch(pks, kDim, base))));
  };
  insert(kVc0, 100, 40);
  insert(kVc1, 200, 20);
  Check(acked_.back());
  const auto sealed_of = [&](const std::string& vc) {
    for (const auto& shard : follower_->applier().shards()) {
      if (shard->vchannel() == vc) return shard->sealed_segments();
    }
    return size_t{0};
  };
  EXPECT_EQ(Sealed(), 0u);
  pressure->store(MemoryPressure::kHigh);
  ASSERT_TRUE(kf::testing::WaitUntil([&] { return Sealed() >= 1; }, absl::Seconds(30)));
  EXPECT_EQ(sealed_of(kVc0), 1u) << "the largest first";
  pressure->store(MemoryPressure::kEasing);  // still sealing: the next largest
  ASSERT_TRUE(kf::testing::WaitUntil([&] { return sealed_of(kVc1) == 1; }, absl::Seconds(30)));
  pressure->store(MemoryPressure::kLow);
  insert(kVc0, 300, 5);  // under a chunk: never sealed for memory
  AwaitCheckpoint();
  EXPECT_EQ(Flushed(), 2u);
  Check(acked_.back());
  Reopen();
  Check(acked_.back());
}

TEST(MemoryPressureTest, HighFromSeventyPercentOfEitherLimitLowUnderHalfOfBoth) {
  EXPECT_EQ(PressureOf(0, 0, 1 << 30, 0), MemoryPressure::kLow);  // no limits
  EXPECT_EQ(PressureOf(49, 100, 0, 0), MemoryPressure::kLow);
  EXPECT_EQ(PressureOf(50, 100, 0, 0), MemoryPressure::kEasing);
  EXPECT_EQ(PressureOf(70, 100, 0, 0), MemoryPressure::kHigh);
  EXPECT_EQ(PressureOf(0, 100, 700, 1000), MemoryPressure::kHigh);
  EXPECT_EQ(PressureOf(10, 100, 600, 1000), MemoryPressure::kEasing);
  EXPECT_EQ(PressureOf(10, 100, 499, 1000), MemoryPressure::kLow);
}

// Retention (docs/recovery-storage.md): an hour keeps everything appended now; a size bound
// lets the log beyond it go however young, never what checkpoints need, and what went is
// OUT_OF_RANGE.
TEST_P(QueryModelTest, ASizeBoundTruncatesTheLogBeforeItsRetentionTime) {
  if (GetParam() != BackendKind::kLocal) GTEST_SKIP() << "the memory log keeps everything";
  recovery_.wal_retention = absl::Hours(1);
  Reopen();
  CreateCollection(kVc1, 42, search::Metric::kL2);
  auto load = [&] {
    for (int i = 0; i < 150; ++i) {
      std::vector<ModelRow> rows;
      MutableMessage m = RandomInsert(kVc1, &rows);
      ModelInsert(kVc1, std::move(rows), Append(std::move(m)));
    }
    Check(acked_.back());
    AwaitCheckpoint();
  };
  load();
  EXPECT_EQ(follower_->checkpoint_stats().truncations, 0u) << "nothing is an hour old";
  recovery_.wal_retention_bytes = 16 << 10;
  Reopen();
  load();
  load();
  EXPECT_GT(follower_->checkpoint_stats().truncations, 0u);
  {  // the scanner goes before its WAL
    auto scanner = wal_->Read(wal::ScanOptions{
        .policy = {.kind = wal::DeliverPolicy::Kind::kStartFrom, .id = first_id_}});
    absl::Status read = scanner.ok() ? (*scanner)->Next({}, absl::Now() + absl::Seconds(5)).status()
                                     : scanner.status();
    EXPECT_EQ(read.code(), absl::StatusCode::kOutOfRange) << read;
  }
  Reopen();
  Check(acked_.back());
  Check(RandomAcked());
}

// A checkpoint committed meanwhile by an older owner (one that had not noticed the move yet)
// does not stop this owner's checkpoints; one committed by a newer owner fences it.
TEST_P(QueryModelTest, AnOlderOwnersCommitIsTakenOverANewerOnesFences) {
  CreateCollection(kVc1, 42, search::Metric::kL2);
  Check(acked_.back());
  AwaitCheckpoint();
  auto rewrite = [&](int64_t term) {
    const std::string key = "checkpoints/" + std::string(kPchannel);
    auto got = meta_->Get(key, absl::InfiniteFuture());
    ASSERT_TRUE(got.ok()) << got.status();
    kingfisher::v1::PChannelCheckpoint c;
    ASSERT_TRUE(c.ParseFromString(got->kv.value));
    c.set_term(term);
    c.set_writer("another");
    ASSERT_TRUE(meta_->Put(key, c.SerializeAsString(), absl::InfiniteFuture()).ok());
  };
  auto insert_and_wait_commit = [&] {
    const uint64_t commits = follower_->checkpoint_stats().commits;
    std::vector<ModelRow> rows;
    MutableMessage m = RandomInsert(kVc1, &rows);
    ModelInsert(kVc1, std::move(rows), Append(std::move(m)));
    Check(acked_.back());
    return kf::testing::WaitUntil(
        [&] {
          const auto s = follower_->checkpoint_stats();
          return s.commits > commits || !s.last_error.ok();
        },
        absl::Seconds(30));
  };
  rewrite(term_.value() - 1);
  ASSERT_TRUE(insert_and_wait_commit());
  EXPECT_TRUE(follower_->checkpoint_stats().last_error.ok())
      << follower_->checkpoint_stats().last_error;
  rewrite(term_.value() + 1);
  ASSERT_TRUE(insert_and_wait_commit());
  EXPECT_EQ(GetStreamingCode(follower_->checkpoint_stats().last_error),
            StreamingCode::kChannelFenced);
}

TEST_P(QueryModelTest, ASearchBeyondTheAppliedTimestampWaitsAndTimesOut) {
  CreateCollection(kVc0, 42, search::Metric::kL2);
  const uint64_t created = acked_.back();
  follower_->Want(created);
  ASSERT_TRUE(follower_->applier().AwaitTSafe(created, absl::Now() + absl::Seconds(30)));
  // Nothing was appended after: a later timestamp is not reached (the caller answers
  // DEADLINE_EXCEEDED, never a stale result).
  EXPECT_FALSE(follower_->applier().AwaitTSafe(created + (uint64_t{1} << 40),
                                               absl::Now() + absl::Milliseconds(50)));
}

TEST_P(QueryModelTest, TheRegistryAnswersEachConsistencyLevelAndRefusesBadCalls) {
  QueryRegistry registry({.shard = {}, .tso = tso_.get()});
  registry.Follow(wal_);
  CreateCollection(kVc0, 42, search::Metric::kL2);
  kingfisher::v1::InsertBatch b = Batch({7}, kDim, 0.5f);
  Append(NewInsertMessage(kVc0, b));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);

  kingfisher::v1::SearchRequest r = StrongSearch(kVc0, 3);
  // STRONG sees the write acknowledged just before, without waiting for a periodic TimeTick
  // (the WAL's loop is not even started here: the registry asks for the tick).
  auto strong = registry.Search(r, deadline);
  ASSERT_TRUE(strong.ok()) << strong.status();
  ASSERT_EQ(strong->results_size(), 1);
  EXPECT_THAT(strong->results(0).pks(), ElementsAre(7));
  EXPECT_THAT(strong->results(0).distances(), ElementsAre(0));
  EXPECT_GT(strong->timestamp(), acked_.back());

  r.set_consistency(kingfisher::v1::EVENTUALLY);
  auto eventually = registry.Search(r, deadline);
  ASSERT_TRUE(eventually.ok()) << eventually.status();
  EXPECT_GE(eventually->timestamp(), acked_.back());
  r.set_consistency(kingfisher::v1::STRONG);

  // An explicit timestamp before the insert does not see it.
  r.set_timestamp(acked_.back() - 1);
  EXPECT_THAT(registry.Search(r, deadline)->results(0).pks(), IsEmpty());
  r.set_timestamp(0);

  kingfisher::v1::GetRequest g;
  g.set_vchannel(kVc0);
  g.add_pks(7);
  g.add_pks(8);
  g.set_consistency(kingfisher::v1::STRONG);
  auto got = registry.Get(g, deadline);
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->rows_size(), 1);
  EXPECT_EQ(got->rows(0).pk(), 7);
  EXPECT_EQ(got->rows(0).vector_size(), static_cast<int>(kDim));

  auto code = [&](kingfisher::v1::SearchRequest bad) {
    return GetStreamingCode(registry.Search(bad, deadline).status());
  };
  auto with = [&](auto change) {
    kingfisher::v1::SearchRequest bad = r;
    change(bad);
    return code(bad);
  };
  using kingfisher::v1::SearchRequest;
  EXPECT_EQ(with([](SearchRequest& x) { x.set_dim(kDim + 1); }), StreamingCode::kInvalidArgument);
  EXPECT_EQ(with([](SearchRequest& x) {
              x.set_dim(2);
              x.mutable_vectors()->Truncate(2);
            }),
            StreamingCode::kInvalidArgument);  // whole vectors, but not the collection's dim
  EXPECT_EQ(with([](SearchRequest& x) { x.set_vectors(0, std::nanf("")); }),
            StreamingCode::kInvalidArgument);
  EXPECT_EQ(with([](SearchRequest& x) { x.set_vectors(1, INFINITY); }),
            StreamingCode::kInvalidArgument);
  EXPECT_EQ(with([](SearchRequest& x) { x.set_topk(0); }), StreamingCode::kInvalidArgument);
  EXPECT_EQ(with([](SearchRequest& x) { x.set_topk(kMaxTopK + 1); }),
            StreamingCode::kInvalidArgument);
  EXPECT_EQ(with([](SearchRequest& x) {
              x.set_min_pk(5);
              x.set_max_pk(4);
            }),
            StreamingCode::kInvalidArgument);
  EXPECT_EQ(with([](SearchRequest& x) { x.set_consistency(kingfisher::v1::SESSION); }),
            StreamingCode::kInvalidArgument);
  EXPECT_EQ(with([](SearchRequest& x) {
              x.set_consistency(static_cast<kingfisher::v1::ConsistencyLevel>(99));
            }),
            StreamingCode::kInvalidArgument);
  EXPECT_EQ(with([](SearchRequest& x) { x.set_vchannel("kf-dml_0_orders"); }),
            StreamingCode::kInvalidArgument);  // a raw vchannel has no collection
  EXPECT_EQ(with([](SearchRequest& x) { x.set_vchannel("kf-dml_0_77v0"); }),
            StreamingCode::kCollectionNotFound);
  EXPECT_EQ(with([](SearchRequest& x) { x.set_partition("nope"); }),
            StreamingCode::kCollectionNotFound);
  EXPECT_EQ(with([](SearchRequest& x) { x.set_vchannel("kf-dml_1_42v0"); }),
            StreamingCode::kChannelNotExist);  // not followed here
  // A timestamp the shard cannot reach before the deadline: DEADLINE_EXCEEDED, not stale.
  kingfisher::v1::SearchRequest late = r;
  late.set_timestamp(acked_.back() + (uint64_t{500} << 18));  // half a second ahead
  EXPECT_TRUE(absl::IsDeadlineExceeded(
      registry.Search(late, absl::Now() + absl::Milliseconds(50)).status()));
  // Far in the future (a unit mistake): refused at once, and the node's clock is not moved.
  late.set_timestamp(acked_.back() + (uint64_t{1} << 40));
  auto future = registry.Search(late, absl::Now() + absl::Seconds(30));
  EXPECT_EQ(GetStreamingCode(future.status()), StreamingCode::kInvalidArgument) << future.status();
  EXPECT_THAT(std::string(future.status().message()), HasSubstr("in the future"));

  // Dropped: the shard is gone.
  Append(wal::testing::DropCollection(kVc0, 42, next_broadcast_++));
  EXPECT_EQ(code(r), StreamingCode::kCollectionNotFound);
  registry.Unfollow(kPchannel);
  EXPECT_EQ(code(r), StreamingCode::kChannelNotExist);
}

TEST_P(QueryModelTest, InsertsAreRefusedAboveTheGrowingMemoryLimitUntilMemoryIsReleased) {
  auto registry = std::make_shared<QueryRegistry>(QueryRegistryOptions{
      .shard = {.chunk_rows = 16}, .tso = tso_.get(), .growing_memory_limit = 1});
  OpenGatedBy(registry);
  CreateCollection(kVc0, 42, search::Metric::kL2);
  CreateCollection(kVc1, 42, search::Metric::kL2);
  kingfisher::v1::SearchRequest r = StrongSearch(kVc0, 10);
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ASSERT_TRUE(registry->Search(r, deadline).ok());  // the registry follows from here on
  EXPECT_EQ(registry->growing_bytes(), 0u);
  Append(NewInsertMessage(kVc0, Batch({1}, kDim, 0.5f)));  // under the limit: admitted
  ASSERT_TRUE(registry->Search(r, deadline).ok());         // and applied
  EXPECT_GT(registry->growing_bytes(), 0u);

  // Above it: refused, with what to do, and nothing of it is in the log.
  auto refused = wal_->AppendSync({}, NewInsertMessage(kVc1, Batch({2}, kDim, 0.5f)));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_EQ(GetStreamingCode(refused.status()), StreamingCode::kRateLimited);
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("growing_memory_limit"));
  // Other messages still pass: a Delete, a DDL.
  Append(NewDeleteMessage(kVc0, Pks({1})));
  Append(wal::testing::DropCollection(kVc0, 42, next_broadcast_++));
  r.set_vchannel(kVc1);
  auto other = registry->Search(r, deadline);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_THAT(other->results(0).pks(), IsEmpty());  // pk 2 never landed

  // The drop released the rows: Inserts are admitted again.
  EXPECT_EQ(registry->growing_bytes(), 0u);
  Append(NewInsertMessage(kVc1, Batch({3}, kDim, 0.5f)));
  other = registry->Search(r, deadline);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_THAT(other->results(0).pks(), ElementsAre(3));
}

// memory_limit bounds the whole process: from 90% of it on (the resident bytes given here)
// Inserts are refused naming it, other messages pass, and below they are admitted again.
TEST_P(QueryModelTest, InsertsAreRefusedWhileTheProcessIsAtItsMemoryLimit) {
  auto resident = std::make_shared<std::atomic<size_t>>(100);
  auto registry = std::make_shared<QueryRegistry>(
      QueryRegistryOptions{.shard = {.chunk_rows = 16},
                           .tso = tso_.get(),
                           .memory_limit = 1000,
                           .resident_bytes = [resident] { return resident->load(); }});
  OpenGatedBy(registry);
  CreateCollection(kVc0, 42, search::Metric::kL2);
  Append(NewInsertMessage(kVc0, Batch({1}, kDim, 0.5f)));  // under the limit: admitted

  resident->store(900);
  auto refused = wal_->AppendSync({}, NewInsertMessage(kVc0, Batch({2}, kDim, 0.5f)));
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(refused.status())) << refused.status();
  EXPECT_THAT(std::string(refused.status().message()), HasSubstr("memory_limit"));
  Append(NewDeleteMessage(kVc0, Pks({1})));  // other messages pass

  resident->store(899);
  Append(NewInsertMessage(kVc0, Batch({3}, kDim, 0.5f)));
  kingfisher::v1::SearchRequest r = StrongSearch(kVc0, 10);
  auto found = registry->Search(r, absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(found.ok()) << found.status();
  EXPECT_THAT(found->results(0).pks(), ElementsAre(3));  // 1 deleted, 2 never landed
}

// A search is a trace of its own (docs/search.md): each shard call is a `kf.search.shard` /
// `kf.get.shard` server span under the request's traceparent, with its tSafe wait as an event.
TEST_P(QueryModelTest, EachShardCallIsAServerSpanUnderTheCallersTraceWithItsTSafeWait) {
  trace::testing::ScopedInMemoryTracing tracing;
  QueryRegistry registry({.shard = {}, .tso = tso_.get()});
  registry.Follow(wal_);
  CreateCollection(kVc0, 42, search::Metric::kL2);
  Append(NewInsertMessage(kVc0, Batch({7}, kDim, 0.5f)));
  auto [caller_ctx, caller] = trace::GetTracerProvider()
                                  ->GetTracer(trace::kSearchTracerScope)
                                  ->StartSpan(trace::Context(), "caller");
  kingfisher::v1::SearchRequest r = StrongSearch(kVc0, 3);
  r.set_traceparent(trace::FormatTraceparent(caller->context()));
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  ASSERT_TRUE(registry.Search(r, deadline).ok());
  kingfisher::v1::GetRequest g;
  g.set_vchannel(kVc0);
  g.add_pks(7);
  g.set_consistency(kingfisher::v1::STRONG);
  g.set_traceparent(r.traceparent());
  ASSERT_TRUE(registry.Get(g, deadline).ok());
  r.set_dim(kDim / 2);  // two queries of the wrong dim, refused after the wait: an error span
  ASSERT_FALSE(registry.Search(r, deadline).ok());
  caller->End();

  const std::vector<trace::SpanData> searches = tracing.SpansNamed("kf.search.shard");
  ASSERT_EQ(searches.size(), 2u);
  for (const trace::SpanData& s : tracing.Spans()) {
    if (s.name != "kf.search.shard" && s.name != "kf.get.shard") continue;
    EXPECT_EQ(s.scope, trace::kSearchTracerScope);
    EXPECT_EQ(s.kind, trace::SpanKind::kServer);
    EXPECT_EQ(s.context.trace_id, caller->context().trace_id) << s.name;
    EXPECT_EQ(s.parent_span_id, caller->context().span_id) << s.name;
    EXPECT_EQ(std::get<std::string>(s.attributes.at("vchannel")), kVc0);
    ASSERT_GE(s.events.size(), 1u) << s.name;  // an error adds an "exception" event
    EXPECT_EQ(s.events[0].name, "tsafe.wait");
    EXPECT_GE(std::get<double>(s.events[0].attributes.at("wait.ms")), 0);
    EXPECT_GE(std::get<int64_t>(s.events[0].attributes.at("tsafe")),
              std::get<int64_t>(s.events[0].attributes.at("search.timestamp")));
  }
  EXPECT_EQ(tracing.SpansNamed("kf.get.shard").size(), 1u);
  EXPECT_EQ(searches[0].status, trace::SpanStatusCode::kUnset);
  EXPECT_GT(std::get<int64_t>(searches[0].attributes.at("search.timestamp")), 0);
  EXPECT_EQ(searches[1].status, trace::SpanStatusCode::kError);
}

INSTANTIATE_TEST_SUITE_P(Backends, QueryModelTest,
                         ::testing::Values(BackendKind::kMemory, BackendKind::kLocal),
                         [](const auto& info) { return wal::testing::BackendName(info.param); });

// Recovery storage over an object store that errs: every kind of failure object storage has
// (docs/object-store.md), injected by FaultObjectStore in front of the local store.
class QueryFaultTest : public QueryModelTest {
 protected:
  void SetUp() override {
    const std::string dir =
        std::filesystem::temp_directory_path() / ("kf-query-faults-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    base_ = *object::LocalObjectStore::Open(fs::DefaultFileSystem(), dir);
    base_dir_ = dir;
    auto faults = std::make_unique<object::FaultObjectStore>(base_.get());
    faults_ = faults.get();
    objects_ = std::move(faults);
    io_timeout_ = absl::Seconds(1);  // a Put slower than this fails
    QueryModelTest::SetUp();
  }
  void TearDown() override {
    QueryModelTest::TearDown();
    std::filesystem::remove_all(base_dir_);
  }
  // Steps of the random history until `n` more checkpoints failed; checks the model, which
  // neither appends nor searches waited for the store.
  void StepWhileFlushesFail(int n) {
    const uint64_t failures = follower_->checkpoint_stats().failures + n;
    auto failed = [&] { return follower_->checkpoint_stats().failures >= failures; };
    for (int step = 0; step < 2000 && !failed() && !HasFatalFailure(); ++step) Step();
    Check(acked_.back());
    ASSERT_TRUE(kf::testing::WaitUntil(failed, absl::Seconds(30)));
  }
  std::unique_ptr<object::ObjectStore> base_;
  std::string base_dir_;
  object::FaultObjectStore* faults_ = nullptr;  // objects_
};

// Errors (503s), timeouts, PUTs slower than the I/O timeout, PUTs applied whose answer was
// lost, failing LISTs and DELETEs of the garbage collection: appends and searches go on, each
// failed checkpoint is tried again, none commits a segment it did not write, and once the
// store behaves every sealed segment is flushed, no object is left unnamed (a dropped
// collection's neither; commits that cannot leave orphans list nothing), and a restart from
// the checkpoint answers as the model does.
TEST_P(QueryFaultTest, ErrorsTimeoutsAndSlowOrLostPutsAreRetriedAndNothingIsLost) {
  using Op = object::FaultObjectStore::Op;
  CreateCollection(kVc0, 42, search::Metric::kL2);
  CreateCollection(kVc1, 42, search::Metric::kL2);
  CreateCollection(kVcCos, 43, search::Metric::kCosine);
  Append(
      wal::testing::PartitionDdl(MessageType::kCreatePartition, kVc0, 42, "p1", next_broadcast_++));
  for (int step = 0; step < 400 && Sealed() == 0 && !HasFatalFailure(); ++step) Step();
  AwaitCheckpoint();
  ASSERT_GT(Flushed(), 0u);

  faults_->FailNext(Op::kPut, absl::UnavailableError("injected: 503 SlowDown"), 10);
  StepWhileFlushesFail(10);
  faults_->TimeoutNext(Op::kPut, 2);
  StepWhileFlushesFail(2);
  faults_->SetPutDelay(absl::Seconds(2));  // beyond the I/O timeout: never applied
  StepWhileFlushesFail(1);
  for (int step = 0; step < 400 && Flushed() == Sealed() && !HasFatalFailure(); ++step) Step();
  EXPECT_LT(Flushed(), Sealed()) << "no segment sealed while flushes failed";

  // Slow but within the timeout, answers lost after the PUT applied, a failing garbage
  // collection: checkpoints still commit.
  faults_->SetPutDelay(absl::Milliseconds(20));
  for (int i = 0; i < 3; ++i) faults_->LoseNextPutAnswer();
  StepWhileFlushesFail(3);
  // The failed writes make the next commits collect garbage: two fail, the third completes.
  const uint64_t lists = faults_->calls(Op::kList) + 3;
  faults_->FailNext(Op::kList, absl::UnavailableError("injected: LIST 503"), 2);
  auto collected = [&] { return faults_->calls(Op::kList) >= lists; };
  for (int step = 0; step < 200 && !HasFatalFailure(); ++step) {
    Step();  // a change: the next commit
    if (kf::testing::WaitUntil(collected, absl::Milliseconds(100))) break;
  }
  EXPECT_TRUE(collected());
  Check(acked_.back());
  AwaitCheckpoint();
  faults_->SetPutDelay(absl::ZeroDuration());
  // One more commit with nothing failing: its garbage collection removes every orphan.
  std::vector<ModelRow> rows;
  MutableMessage m = RandomInsert(kVc1, &rows);
  ModelInsert(kVc1, std::move(rows), Append(std::move(m)));
  AwaitCheckpoint();
  EXPECT_EQ(Flushed(), Sealed());

  // The store behaving, ordinary commits list nothing (once a collection left pending by the
  // failed LISTs completed); one that stops naming a dropped collection's segments lists the
  // prefix and deletes them, and a DELETE that fails is tried again at the next commit.
  ManualFlush(kVcCos);  // so the collection has a flushed segment
  for (int round = 0; round < 2; ++round) {
    const uint64_t lists = faults_->calls(Op::kList);
    for (int step = 0; step < 40 && !HasFatalFailure(); ++step) Step();
    AwaitCheckpoint();
    if (round == 1) {
      EXPECT_EQ(faults_->calls(Op::kList), lists) << "needless LIST";
    }
  }
  const uint64_t lists_before_drop = faults_->calls(Op::kList);
  faults_->FailNext(Op::kDelete, absl::UnavailableError("injected: DELETE 503"));
  Append(wal::testing::DropCollection(kVcCos, 43, next_broadcast_++));
  model_[kVcCos].dropped = true;
  Check(acked_.back());  // applied
  AwaitCheckpoint();
  EXPECT_GT(faults_->calls(Op::kList), lists_before_drop)
      << "the dropped collection's objects stay";
  rows.clear();
  m = RandomInsert(kVc1, &rows);
  ModelInsert(kVc1, std::move(rows), Append(std::move(m)));
  Check(acked_.back());
  AwaitCheckpoint();
  EXPECT_GE(faults_->calls(Op::kList), lists_before_drop + 2)
      << "a failed DELETE was not tried again";

  auto committed = meta_->Get(std::string("checkpoints/") + kPchannel, absl::InfiniteFuture());
  ASSERT_TRUE(committed.ok()) << committed.status();
  kingfisher::v1::PChannelCheckpoint checkpoint;
  ASSERT_TRUE(checkpoint.ParseFromString(committed->kv.value));
  const absl::flat_hash_set<std::string> named = ObjectsNamedBy(checkpoint);
  EXPECT_FALSE(named.empty());
  auto listed =
      base_->List(object_prefix_, "", object::ObjectStore::kNoLimit, absl::InfiniteFuture());
  ASSERT_TRUE(listed.ok()) << listed.status();
  for (const object::ObjectInfo& o : listed->objects) {
    EXPECT_TRUE(named.contains(o.key)) << "orphan " << o.key;
  }

  Reopen();
  EXPECT_GT(follower_->checkpoint_stats().loaded_segments, 0u);
  for (int i = 0; i < 5 && !HasFatalFailure(); ++i) Check(i == 0 ? acked_.back() : RandomAcked());
}

INSTANTIATE_TEST_SUITE_P(Faults, QueryFaultTest, ::testing::Values(BackendKind::kLocal),
                         [](const auto& info) { return wal::testing::BackendName(info.param); });

// Recovery storage on a real Ceph RGW (S3), the binary's shared one (rgw_process.h).
class QueryRgwTest : public QueryModelTest {
 protected:
  void SetUp() override {
    object::testing::StoreUnderTest s3 = object::testing::MakeStoreUnderTest("s3");
    if (s3.skip) GTEST_SKIP() << s3.skip_reason;
    ASSERT_NE(s3.store, nullptr) << s3.skip_reason;
    std::string why_not;
    rgw_ = object::testing::SharedRgw(&why_not);  // the one the store talks to
    objects_ = std::move(s3.store);
    object_prefix_ = absl::StrCat("querytest-", ::getpid(), "/");
    io_timeout_ = absl::Seconds(2);  // a flush against a stopped store fails in seconds
    QueryModelTest::SetUp();
  }
  void TearDown() override {
    if (rgw_ != nullptr) {
      absl::Status s = rgw_->StartRgw();  // leave radosgw running for the next test
      if (!s.ok() && !absl::IsFailedPrecondition(s)) ADD_FAILURE() << s;
    }
    QueryModelTest::TearDown();
  }
  object::testing::RgwProcess* rgw_ = nullptr;
};

// The object store stopped mid-run: appends, searches and seals go on, every flush fails and
// is retried (nothing is committed, nothing truncated), and once radosgw is back the segments
// sealed meanwhile are flushed and a restart from the checkpoint answers as the model does.
TEST_P(QueryRgwTest, FlushesRetryWhileTheStoreIsDownAndNothingIsLost) {
  CreateCollection(kVc0, 42, search::Metric::kL2);
  CreateCollection(kVc1, 42, search::Metric::kL2);
  CreateCollection(kVcCos, 43, search::Metric::kCosine);
  Append(
      wal::testing::PartitionDdl(MessageType::kCreatePartition, kVc0, 42, "p1", next_broadcast_++));
  for (int step = 0; step < 80 && !HasFatalFailure(); ++step) Step();
  Check(acked_.back());
  AwaitCheckpoint();
  ASSERT_GT(Flushed(), 0u) << "nothing reached RGW before it stopped";

  rgw_->StopRgw();
  const size_t sealed_before = Sealed();
  for (int step = 0; step < 80 && !HasFatalFailure(); ++step) Step();
  Check(acked_.back());  // appends and searches do not wait for the store
  EXPECT_GT(Sealed(), sealed_before) << "no segment sealed while the store was down";
  // A checkpoint with segments to flush fails (one with none, metadata only, may commit).
  ASSERT_TRUE(kf::testing::WaitUntil([&] { return !follower_->checkpoint_stats().last_error.ok(); },
                                     absl::Seconds(60)));
  EXPECT_LT(Flushed(), Sealed());

  ASSERT_TRUE(rgw_->StartRgw().ok());
  const absl::Status reachable =
      objects_->List(object_prefix_, "", 1, absl::Now() + absl::Seconds(10)).status();
  ASSERT_TRUE(reachable.ok()) << "radosgw restarted but does not answer: " << reachable;
  AwaitCheckpoint();
  EXPECT_EQ(Flushed(), Sealed());
  Reopen();
  EXPECT_GT(follower_->checkpoint_stats().loaded_segments, 0u);
  for (int i = 0; i < 5 && !HasFatalFailure(); ++i) Check(i == 0 ? acked_.back() : RandomAcked());
}

// S3 reads an object into the heap: a flushed segment read back, or one loaded at a restart, is
// copied into an unnamed file of the spill dir and mapped (RecoveryStorageOptions::spill_dir),
// so the node holds as little of it in its own memory as with the local store's mapping.
// Without a spill dir it holds the rows.
TEST_P(QueryRgwTest, SegmentsReadFromS3AreMappedFromTheSpillDir) {
  CreateCollection(kVc1, 42, search::Metric::kL2);
  const size_t rows = InsertBelowSealRows(kVc1);
  const size_t row_bytes = rows * search::Chunk::BytesPerRow(kDim);
  const uint64_t flush = ManualFlush(kVc1);
  ASSERT_TRUE(kf::testing::WaitUntil(
      [&] { return follower_->checkpoint_stats().committed_ts >= flush; }, absl::Seconds(30)));
  EXPECT_EQ(Flushed(), 1u);
  EXPECT_LT(ShardBytes(), row_bytes) << "the flushed segment's read-back is in the heap";
  Reopen();
  EXPECT_EQ(follower_->checkpoint_stats().loaded_segments, 1u);
  EXPECT_LT(ShardBytes(), row_bytes) << "the loaded segment is in the heap";
  Check(acked_.back());
  EXPECT_TRUE(std::filesystem::is_empty(recovery_.spill_dir)) << "the copies have no names";
  recovery_.spill_dir.clear();
  Reopen();
  EXPECT_GE(ShardBytes(), row_bytes) << "without a spill dir the segment is in the heap";
  Check(acked_.back());
}

INSTANTIATE_TEST_SUITE_P(Rgw, QueryRgwTest, ::testing::Values(BackendKind::kLocal),
                         [](const auto& info) { return wal::testing::BackendName(info.param); });

}  // namespace
}  // namespace kf::query
