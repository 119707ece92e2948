// Crash acceptance of real-time search (docs/search.md) and of recovery storage
// (docs/recovery-storage.md, the last test): inserts and deletes run
// against a collection while the process owning one of its shards is killed with SIGKILL — a
// node of the cluster (its pchannel migrates to a live node, which rebuilds the shard from the
// WAL) or the standalone server (restarted on the same address). Afterwards every acknowledged
// row is found by `get` and by a strong search for its own vector exactly once, and every
// acknowledged delete still hides its row. Searches issued while the shard moves wait for it
// and answer correctly.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster_fixture.h"
#include "common/testing/loopback.h"
#include "common/testing/temp_dir.h"
#include "common/testing/wait_until.h"
#include "gmock/gmock.h"
#include "kingfisher/collections.h"
#include "kingfisher/search.h"
#include "kingfisher/v1/checkpoint.pb.h"
#include "message/vchannel_name.h"
#include "storage/fs/file_system.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/object/local_object_store.h"
#include "storage/object/s3_object_store.h"
#include "storage/object/testing/rgw_process.h"
#include "storage/object/testing/store_under_test.h"
#include "wal/backends/local/layout.h"

namespace kf::cluster_testing {
namespace {

constexpr uint32_t kDim = 8;
constexpr int kRowsPerInsert = 4;
constexpr int kDeleteEvery = 5;  // every 5th insert is followed by a delete of its first row

// A row's vector is a function of its pk, so a search for it can name the row it must find.
std::vector<float> VectorOf(int64_t pk) {
  std::mt19937_64 rng(static_cast<uint64_t>(pk));
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(kDim);
  for (float& x : v) x = u(rng);
  return v;
}

kingfisher::ReadOptions Strong() {
  kingfisher::ReadOptions o;
  o.consistency = kingfisher::Consistency::kStrong;
  o.deadline = kingfisher::Clock::now() + std::chrono::seconds(60);
  return o;
}

// One thread per shard inserting `inserts` batches of kRowsPerInsert rows of that shard (one
// Insert message each, AppendSync) and deleting the first row of every kDeleteEvery-th batch
// once it is acknowledged; plus a searcher looking up, with strong searches, rows that are never
// deleted (the second of each acknowledged batch) until Stop. Every outcome is recorded.
// What a load acknowledged, and what went wrong during it.
struct RowSets {
  std::set<int64_t> live;       // acknowledged, not deleted
  std::set<int64_t> deleted;    // acknowledged insert, acknowledged delete
  std::set<int64_t> uncertain;  // an insert or a delete that failed: either outcome is allowed
  std::vector<std::string> errors;
  int searches = 0;

  void Merge(const RowSets& o) {
    live.insert(o.live.begin(), o.live.end());
    deleted.insert(o.deleted.begin(), o.deleted.end());
    uncertain.insert(o.uncertain.begin(), o.uncertain.end());
    errors.insert(errors.end(), o.errors.begin(), o.errors.end());
    searches += o.searches;
  }
};

class SearchLoad : public RowSets {
 public:
  // Pks start at `pk_base` (loads of one collection need disjoint bases).
  SearchLoad(kingfisher::Client* client, kingfisher::CollectionInfo collection, int inserts,
             int64_t pk_base = 0)
      : client_(client), collection_(std::move(collection)), pk_base_(pk_base) {
    for (uint32_t s = 0; s < collection_.shards; ++s) {
      writers_.emplace_back([this, s, inserts] { Write(s, inserts); });
    }
    searcher_ = std::thread([this] { Search(); });
  }
  // A test that gave up early: the writers stop after the append they are in.
  ~SearchLoad() {
    abandon_ = true;
    Join();
  }

  // Waits for every writer to finish its inserts and, after a kill, for one search started
  // after it to succeed (at most 60 s); then stops the searcher.
  void Join() {
    for (auto& t : writers_) {
      if (t.joinable()) t.join();
    }
    {
      absl::MutexLock l(&mu_);
      auto searched = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !killed_ || abandon_ || searches_ok_after_kill > 0;
      };
      mu_.AwaitWithTimeout(absl::Condition(&searched), absl::Seconds(60));
    }
    stop_ = true;
    if (searcher_.joinable()) searcher_.join();
  }
  int acked_inserts() const { return acked_inserts_.load(); }
  int acked_inserts(uint32_t shard) const { return acked_by_shard_[shard].load(); }
  // From now on, count the searches that start and succeed (killed_searches_ok).
  void MarkKill() { killed_ = true; }
  // The writers stop after the append they are in (for a load of more inserts than it needs).
  void StopWriting() { stop_writing_ = true; }

  // The RowSets are filled by the threads; read them after Join.
  int searches_ok_after_kill = 0;  // started after MarkKill: each waited for the moved shard

 private:
  void Write(uint32_t shard, int inserts) {
    auto producer = client_->CreateProducer();
    if (!producer.ok()) return Error(producer.status().ToString());
    int64_t next = pk_base_ + 1'000'000 * (shard + 1);
    for (int i = 0; i < inserts && !abandon_ && !stop_writing_; ++i) {
      std::vector<int64_t> pks;
      std::vector<float> vectors;
      while (pks.size() < kRowsPerInsert) {
        const int64_t pk = next++;
        if (kingfisher::ShardOfPk(pk, collection_.shards) != shard) continue;
        pks.push_back(pk);
        for (float x : VectorOf(pk)) vectors.push_back(x);
      }
      auto messages = kingfisher::InsertMessages(collection_, pks, vectors);
      if (!messages.ok() || messages->size() != 1) return Error("InsertMessages");
      auto inserted = (*producer)->AppendSync(std::move(messages->front()));
      {
        absl::MutexLock l(&mu_);
        (inserted.ok() ? live : uncertain).insert(pks.begin(), pks.end());
        if (inserted.ok()) searchable_.push_back(pks[1]);
      }
      if (!inserted.ok()) continue;
      acked_inserts_.fetch_add(1);
      acked_by_shard_[shard].fetch_add(1);
      if (i % kDeleteEvery != 0) continue;
      auto del = kingfisher::DeleteMessages(collection_, {pks[0]});
      if (!del.ok() || del->size() != 1) return Error("DeleteMessages");
      auto deleted_ack = (*producer)->AppendSync(std::move(del->front()));
      absl::MutexLock l(&mu_);
      live.erase(pks[0]);
      (deleted_ack.ok() ? deleted : uncertain).insert(pks[0]);
    }
  }

  void Search() {
    std::mt19937 rng(7);
    while (!stop_) {
      int64_t pk;
      {
        absl::MutexLock l(&mu_);
        auto ready = [this] { return !searchable_.empty() || stop_.load(); };
        mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Seconds(1));
        if (searchable_.empty()) continue;
        pk = searchable_[rng() % searchable_.size()];
      }
      kingfisher::SearchOptions o;
      static_cast<kingfisher::ReadOptions&>(o) = Strong();
      o.topk = 3;
      const bool after_kill = killed_;
      // A collection search asks every shard: one that starts after the kill waits for the
      // killed node's shard to be served again.
      auto found = client_->Search(collection_.name, VectorOf(pk), o);
      absl::MutexLock l(&mu_);
      ++searches;
      if (!found.ok()) {
        errors.push_back(absl::StrCat("search for ", pk, ": ", found.status().ToString()));
      } else if (found->hits.size() != 1 || found->hits[0].empty() || found->hits[0][0].pk != pk) {
        std::string hits;
        for (const auto& query : found->hits) {
          for (const auto& h : query) absl::StrAppend(&hits, " ", h.pk, "@", h.distance);
        }
        errors.push_back(absl::StrCat("search for ", pk, " at ", found->timestamp.value(),
                                      " did not find it first:", hits));
      } else if (after_kill) {
        ++searches_ok_after_kill;
      }
    }
  }

  void Error(std::string what) {
    absl::MutexLock l(&mu_);
    errors.push_back(std::move(what));
  }

  kingfisher::Client* const client_;
  const kingfisher::CollectionInfo collection_;
  const int64_t pk_base_;
  absl::Mutex mu_;
  std::vector<int64_t> searchable_;  // acknowledged, never deleted
  std::atomic<int> acked_inserts_{0};
  std::atomic<int> acked_by_shard_[8] = {};  // collections of the tests have <= 8 shards
  std::atomic<bool> stop_{false};
  std::atomic<bool> abandon_{false};
  std::atomic<bool> stop_writing_{false};
  std::atomic<bool> killed_{false};
  std::vector<std::thread> writers_;
  std::thread searcher_;
};

// The /metrics series of a collection's sealed segments in `state` (flushed or unflushed).
std::string SealedSegmentsMetric(int64_t collection_id, const char* state) {
  return absl::StrCat("kf_sealed_segments{collection_id=\"", collection_id, "\",state=\"", state,
                      "\"}");
}

// The checks every scenario ends with (see the file comment).
void ExpectSearchable(kingfisher::Client* client, const std::string& collection,
                      const RowSets& load) {
  std::printf("rows: %zu live, %zu deleted, %zu uncertain; %d strong searches during the load\n",
              load.live.size(), load.deleted.size(), load.uncertain.size(), load.searches);
  for (const std::string& e : load.errors) ADD_FAILURE() << e;
  std::vector<int64_t> asked(load.live.begin(), load.live.end());
  asked.insert(asked.end(), load.deleted.begin(), load.deleted.end());
  asked.insert(asked.end(), load.uncertain.begin(), load.uncertain.end());
  auto got = client->Get(collection, asked, Strong());
  ASSERT_TRUE(got.ok()) << got.status();
  std::map<int64_t, int> seen;
  for (const kingfisher::Row& row : got->rows) {
    ++seen[row.pk];
    EXPECT_EQ(row.vector, VectorOf(row.pk)) << row.pk;
  }
  for (int64_t pk : load.live) EXPECT_EQ(seen[pk], 1) << "acknowledged row " << pk;
  for (int64_t pk : load.deleted) EXPECT_EQ(seen[pk], 0) << "acknowledged delete of " << pk;
  for (int64_t pk : load.uncertain) EXPECT_LE(seen[pk], 1) << "unacknowledged " << pk;

  // A strong search for each row's own vector: the row first at distance 0, exactly once; a
  // deleted row nowhere. 64 queries per call.
  std::vector<int64_t> queried(load.live.begin(), load.live.end());
  queried.insert(queried.end(), load.deleted.begin(), load.deleted.end());
  constexpr size_t kPerCall = 64;
  for (size_t first = 0; first < queried.size(); first += kPerCall) {
    const size_t n = std::min(kPerCall, queried.size() - first);
    std::vector<float> queries;
    for (size_t i = 0; i < n; ++i) {
      for (float x : VectorOf(queried[first + i])) queries.push_back(x);
    }
    kingfisher::SearchOptions o;
    static_cast<kingfisher::ReadOptions&>(o) = Strong();
    o.topk = 5;
    auto found = client->Search(collection, queries, o);
    ASSERT_TRUE(found.ok()) << found.status();
    ASSERT_EQ(found->hits.size(), n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t pk = queried[first + i];
      const auto& hits = found->hits[i];
      const int times = static_cast<int>(std::count_if(
          hits.begin(), hits.end(), [pk](const kingfisher::SearchHit& h) { return h.pk == pk; }));
      if (load.live.contains(pk)) {
        ASSERT_FALSE(hits.empty()) << pk;
        EXPECT_EQ(hits[0].pk, pk) << "a search for row " << pk << "'s vector";
        EXPECT_EQ(hits[0].distance, 0.0f) << pk;
        EXPECT_EQ(times, 1) << "row " << pk << " in a search result";
      } else {
        EXPECT_EQ(times, 0) << "deleted row " << pk << " in a search result";
      }
    }
  }
}

// The flags of the recovery storage tests: small segments sealed every `seal_rows` rows,
// flushed and checkpointed continuously, and the WAL truncated below each checkpoint (64 KiB
// log segments, no retention).
std::vector<std::string> TinyRecoveryStorage(int seal_rows = 64) {
  return {"--segment-seal-rows",   std::to_string(seal_rows),
          "--search-chunk-rows",   "64",
          "--checkpoint-interval", "0.1",
          "--wal-retention",       "0",
          "--wal-segment-bytes",   "65536"};
}

class SearchCrashClusterTest : public ClusterTest {
 protected:
  // What the kill waits for, besides a load on every shard: nothing more, or until the victim
  // flushed a sealed segment and truncated its WAL below a checkpoint.
  enum class KillAfter { kLoad, kTruncation };
  void KillAShardsNodeUnderLoad(KillAfter kill_after = KillAfter::kLoad);
};

// Recovery storage in a cluster on each WAL backend: sealed segments in an object store every
// node reads (a shared directory here; S3 in production), checkpoints in etcd, the WAL
// truncated below them; the node that takes a killed node's pchannel loads its segments from
// the checkpoint and replays the rest of the truncated log.
class RecoveryClusterTest : public SearchCrashClusterTest,
                            public ::testing::WithParamInterface<std::string> {
 protected:
  std::string WalBackend() const override { return GetParam(); }
  std::vector<std::string> NodeArgs() const override {
    std::vector<std::string> args;
    // The objectstore backend's store (in the fixture's args) holds the segments too.
    if (WalBackend() != "objectstore") {
      args = {"--object-store", "file://" + dir_.path() + "/segments"};
    }
    // A shard's growing rows span more than a log segment: a truncation above the checkpoint
    // would lose some of them.
    for (std::string& a : TinyRecoveryStorage(/*seal_rows=*/1024)) args.push_back(std::move(a));
    return args;
  }
};

TEST_F(SearchCrashClusterTest, KillingAShardsNodeLosesNoRowAndNoDelete) {
  KillAShardsNodeUnderLoad();
}

TEST_P(RecoveryClusterTest, TheNewOwnerOfAKilledNodesTruncatedShardLoadsItsCheckpoint) {
  KillAShardsNodeUnderLoad(KillAfter::kTruncation);
  double recovered = 0;
  for (const auto& [id, node] : nodes_) {
    if (node->Running())
      recovered +=
          std::max(0.0, kf::testing::MetricSum(node->http_port(), "kf_recovered_segments"));
  }
  EXPECT_GT(recovered, 0) << "the moved shard was rebuilt without its checkpoint";
}

INSTANTIATE_TEST_SUITE_P(Backends, RecoveryClusterTest,
                         ::testing::Values("local", "objectstore", "quorum"),
                         [](const auto& info) { return info.param; });

void SearchCrashClusterTest::KillAShardsNodeUnderLoad(KillAfter kill_after) {
  auto collection = client_->CreateCollection({.name = "vecs", .dim = kDim, .shards = 3});
  ASSERT_TRUE(collection.ok()) << collection.status();
  auto pchannel = PChannelOfVChannel(collection->vchannels[0]);
  ASSERT_TRUE(pchannel.ok()) << pchannel.status();
  const auto [victim, old_term] = Owners().at(*pchannel);
  ASSERT_GT(victim, 0);

  // Until a truncation: a load without end, stopped at the kill.
  const int kInserts = kill_after == KillAfter::kLoad ? 60 : 1'000'000;
  SearchLoad load(client_.get(), *collection, kInserts);
  ASSERT_TRUE(
      kf::testing::WaitUntil([&] { return load.acked_inserts() >= 60; }, absl::Seconds(60)));
  if (kill_after == KillAfter::kTruncation) {
    const int port = nodes_[victim]->http_port();
    const std::string flushed = SealedSegmentsMetric(collection->id, "flushed");
    // The log's size falls below what it was: whole segments went.
    const std::string size = absl::StrCat("kf_wal_size_bytes{pchannel=\"", *pchannel, "\"}");
    const std::string rows_metric = absl::StrCat("kf_growing_rows{pchannel=\"", *pchannel, "\"}");
    double largest = 0;
    ASSERT_TRUE(kf::testing::WaitUntil(
        [&] {
          const double now = kf::testing::MetricSum(port, size);
          largest = std::max(largest, now);
          // And the rows of the growing segment span more than a log segment (~350 bytes an
          // insert of 4 rows): a truncation above the checkpoint would drop some of them. The
          // pchannel holds this shard alone, whose segments seal at exactly 1024 rows (inserts
          // of 4), so its rows past the last multiple of 1024 are the growing segment's.
          const auto rows = static_cast<int64_t>(kf::testing::MetricSum(port, rows_metric));
          return now < largest && kf::testing::MetricSum(port, flushed) > 0 && rows % 1024 >= 800;
        },
        absl::Seconds(60)))
        << "no truncation of " << *pchannel << " (largest " << largest << " bytes)";
  }
  const int victim_acked_at_kill = load.acked_inserts(0);
  nodes_[victim]->Kill();
  load.MarkKill();
  load.StopWriting();
  load.Join();
  EXPECT_LT(victim_acked_at_kill, kInserts) << "shard 0 was not being written when killed";
  EXPECT_GT(load.searches_ok_after_kill, 0) << "no search spanned the move";

  ASSERT_TRUE(WaitAllAssigned(absl::Seconds(30)));
  const auto after = Owners().at(*pchannel);
  EXPECT_NE(after.first, victim);
  EXPECT_GT(after.second, old_term);
  ExpectSearchable(client_.get(), "vecs", load);
}

// A standalone server with a collection "vecs", and a client of it.
class StandaloneCrashTest : public ::testing::Test {
 protected:
  void StartWithCollection(kf::testing::ServerProcess::Options options, uint32_t shards) {
    options.data_dir = data_dir();
    server_.emplace(std::move(options));
    ASSERT_TRUE(server_->Start()) << server_->Output();
    auto client = kingfisher::Client::Connect(
        {.endpoint = server_->address(), .append_timeout = std::chrono::seconds(60)});
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
    auto collection = client_->CreateCollection({.name = "vecs", .dim = kDim, .shards = shards});
    ASSERT_TRUE(collection.ok()) << collection.status();
    collection_ = *std::move(collection);
  }
  std::string data_dir() const { return dir_.path() + "/data"; }

  kf::testing::TempDir dir_;
  std::optional<kf::testing::ServerProcess> server_;
  std::unique_ptr<kingfisher::Client> client_;
  kingfisher::CollectionInfo collection_;
};

class SearchCrashStandaloneTest : public StandaloneCrashTest {};
class RecoveryCrashTest : public StandaloneCrashTest {};

TEST_F(SearchCrashStandaloneTest, KillingTheServerLosesNoRowAndNoDelete) {
  StartWithCollection({}, /*shards=*/2);
  if (HasFatalFailure()) return;
  kf::testing::ServerProcess& server = *server_;

  constexpr int kInserts = 60;
  SearchLoad load(client_.get(), collection_, kInserts);
  ASSERT_TRUE(kf::testing::WaitUntil([&] { return load.acked_inserts() >= kInserts / 2; },
                                     absl::Seconds(60)));
  const int acked_at_kill = load.acked_inserts();
  server.Kill();
  load.MarkKill();
  ASSERT_TRUE(server.Start()) << server.Output();
  load.Join();
  EXPECT_LT(acked_at_kill, 2 * kInserts) << "the kill was not under load";
  EXPECT_GT(load.searches_ok_after_kill, 0) << "no search spanned the restart";
  ExpectSearchable(client_.get(), "vecs", load);
}

// The checkpoints in a stopped standalone server's metadata store.
std::vector<kingfisher::v1::PChannelCheckpoint> Checkpoints(const std::string& data_dir) {
  auto meta = meta::EmbeddedMetaStore::Open(data_dir + "/meta", {});
  EXPECT_TRUE(meta.ok()) << meta.status();
  if (!meta.ok()) return {};
  auto checkpoints = (*meta)->Range("kf/kf/checkpoints/", absl::InfiniteFuture());
  EXPECT_TRUE(checkpoints.ok()) << checkpoints.status();
  if (!checkpoints.ok()) return {};
  std::vector<kingfisher::v1::PChannelCheckpoint> out;
  for (const meta::KeyValue& kv : checkpoints->kvs) {
    EXPECT_TRUE(out.emplace_back().ParseFromString(kv.value)) << kv.key;
  }
  return out;
}

// The objects under a stopped standalone server's data dir that no checkpoint in its metadata
// store names (garbage collection leaves none behind a commit), and how many are named.
std::pair<std::vector<std::string>, size_t> Orphans(const std::string& data_dir) {
  std::set<std::string> named;
  for (const kingfisher::v1::PChannelCheckpoint& c : Checkpoints(data_dir)) {
    for (const auto& shard : c.shards()) {
      for (const auto& partition : shard.partitions()) {
        for (const auto& segment : partition.flushed()) {
          named.insert(segment.object());
          named.insert(segment.delete_logs().begin(), segment.delete_logs().end());
        }
      }
    }
  }
  auto objects = object::LocalObjectStore::Open(fs::DefaultFileSystem(), data_dir + "/objects");
  EXPECT_TRUE(objects.ok()) << objects.status();
  auto listed =
      (*objects)->List("kf/segments/", "", object::ObjectStore::kNoLimit, absl::InfiniteFuture());
  EXPECT_TRUE(listed.ok()) << listed.status();
  std::vector<std::string> orphans;
  for (const object::ObjectInfo& o : listed->objects) {
    if (!named.contains(o.key)) orphans.push_back(o.key);
  }
  for (const std::string& key : named) {
    EXPECT_TRUE((*objects)->Head(key, absl::InfiniteFuture()).ok()) << "named, missing: " << key;
  }
  return {orphans, named.size()};
}

// The WAL was never truncated above a checkpoint: the first segment file of each pchannel's log
// in a stopped standalone server's data dir starts at or below its checkpoint's replay_from.
void ExpectEachLogHoldsItsCheckpointsReplay(const std::string& data_dir) {
  int checked = 0;
  for (const kingfisher::v1::PChannelCheckpoint& c : Checkpoints(data_dir)) {
    if (c.replay_from().empty()) continue;
    auto replay_from = kingfisher::MessageId::Decode(c.replay_from());
    ASSERT_TRUE(replay_from.ok()) << replay_from.status();
    uint64_t first = UINT64_MAX;
    for (const auto& file :
         std::filesystem::directory_iterator(data_dir + "/wal/" + c.pchannel())) {
      uint64_t base;
      Term term;
      if (wal::local::ParseSegmentFileName(file.path().filename().string(), &base, &term)) {
        first = std::min(first, base);
      }
    }
    EXPECT_LE(first, replay_from->entry()) << c.pchannel() << " truncated above its checkpoint";
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// Recovery storage (docs/recovery-storage.md): tiny segments sealed, flushed and checkpointed
// continuously, and the WAL truncated below each checkpoint (64 KiB log segments, no
// retention), while the standalone server is killed at random points of the load — so kills
// land before, during and after object writes, checkpoint commits and truncations, and during
// the recovery of the previous round (its searches wait for it) — 10 times (the named crash
// points of the next test add 25 rounds). After each round every acknowledged row of every
// round is found exactly once and every acknowledged delete hides its row (a truncation above
// a checkpoint would lose rows: the restart reads the log from the checkpoint); the restarted
// server loaded sealed segments from its checkpoints instead of replaying their rows.
TEST_F(RecoveryCrashTest, KillsAtRandomPointsOfFlushesAndCheckpointsLoseNothing) {
  // 6 shards on 4 pchannels: a pchannel's checkpoint covers shards sealed at different points,
  // so a replay starts below some of their flushed rows (which it must skip).
  StartWithCollection({.extra_args = TinyRecoveryStorage()}, /*shards=*/6);
  if (HasFatalFailure()) return;
  kf::testing::ServerProcess& server = *server_;

  constexpr int kRounds = 10;
  constexpr int kInserts = 20;  // per shard and round: 80 rows, a seal every 16 inserts
  std::mt19937 rng(::testing::UnitTest::GetInstance()->random_seed());
  RowSets total;
  double recovered_segments = 0;
  double truncations = 0;  // reported by each server run at the end of its round
  for (int round = 0; round < kRounds && !::testing::Test::HasFailure(); ++round) {
    SearchLoad load(client_.get(), collection_, kInserts, int64_t{100'000'000} * (round + 1));
    const int kill_at = std::uniform_int_distribution<int>(1, 6 * kInserts - 1)(rng);
    ASSERT_TRUE(
        kf::testing::WaitUntil([&] { return load.acked_inserts() >= kill_at; }, absl::Seconds(60)));
    server.Kill();
    load.MarkKill();
    ASSERT_TRUE(server.Start()) << server.Output();
    load.Join();
    // Followers start at a pchannel's first search: the load's searches after the restart.
    recovered_segments +=
        std::max(0.0, kf::testing::MetricSum(server.http_port(), "kf_recovered_segments"));
    truncations += std::max(0.0, kf::testing::MetricSum(server.http_port(), "kf_wal_truncations"));
    total.Merge(load);
    if (round % 5 == 4 || round == kRounds - 1) ExpectSearchable(client_.get(), "vecs", total);
  }
  std::printf(
      "%d rounds: %zu live rows, %zu deleted; %.0f sealed segments loaded at restarts, %.0f "
      "truncations\n",
      kRounds, total.live.size(), total.deleted.size(), recovered_segments, truncations);
  EXPECT_GT(recovered_segments, 0) << "no restart loaded a sealed segment";
  EXPECT_GT(kf::testing::MetricSum(server.http_port(), "kf_checkpoints"), 0)
      << "nothing checkpointed";
  EXPECT_GT(truncations, 0) << "the WAL was never truncated";

  // Every object is named by a checkpoint: the flushes the kills cut short left orphans, which
  // the garbage collection after a later commit removed.
  ASSERT_EQ(server.Stop().exit_code, 0);
  const auto [orphans, named] = Orphans(data_dir());
  EXPECT_THAT(orphans, ::testing::IsEmpty());
  EXPECT_GT(named, 0u);
  ExpectEachLogHoldsItsCheckpointsReplay(data_dir());
}

// A server of the test build that must have killed itself at `point`.
void ExpectCrashedAt(const kf::testing::ProcessResult& died, const char* point) {
  ASSERT_TRUE(died.exited) << "crash point " << point << " never reached";
  EXPECT_EQ(died.term_signal, SIGKILL) << died.output;
  // The hook's line at the kill (its banner at start names the point differently).
  EXPECT_THAT(died.output, ::testing::HasSubstr(absl::StrCat("crash point ", point, " pass ")));
}

// Named crash points (common/crash_point.h): the standalone server's test build
// (kingfisher-crash-hook) kills itself with SIGKILL exactly where a crash hurts recovery most —
// after some of a flush's objects are written, after all of them but before the checkpoint
// commit, after the commit but before its garbage collection, inside the garbage collection,
// between two segment files of a WAL truncation, and while a restart loads sealed segments —
// each 5 times, at a random pass of the point (25 rounds). The load of a round runs until the
// server dies; it restarts without a crash point and the round's searches wait for it. Every
// few rounds every acknowledged row of every round is found exactly once and every
// acknowledged delete hides its row; at the end no object is left that no checkpoint names.
TEST_F(RecoveryCrashTest, DiesAtEachNamedCrashPointAndLosesNothing) {
  struct Point {
    const char* name;
    int max_pass;                // reached by every round's load
    const char* then = nullptr;  // the first pass of this kills the restart after the crash
  };
  // A crash at objects_written leaves orphans; the restart after it meets orphan_deleted.
  constexpr Point kPoints[] = {{"checkpoint.object_written", 8},
                               {"checkpoint.objects_written", 3, "checkpoint.orphan_deleted"},
                               {"checkpoint.committed", 3, "recovery.segment_loaded"},
                               {"wal.segment_truncated", 2},
                               {"recovery.segment_loaded", 4}};
  constexpr int kRounds = 5 * std::size(kPoints);
  StartWithCollection({.extra_args = TinyRecoveryStorage(), .binary = "kingfisher-crash-hook"},
                      /*shards=*/6);
  if (HasFatalFailure()) return;
  kf::testing::ServerProcess& server = *server_;

  std::mt19937 rng(::testing::UnitTest::GetInstance()->random_seed());
  RowSets total;
  for (int round = 0; round < kRounds && !::testing::Test::HasFailure(); ++round) {
    const Point& point = kPoints[round % std::size(kPoints)];
    const int pass = std::uniform_int_distribution<int>(1, point.max_pass)(rng);
    SCOPED_TRACE(absl::StrCat("round ", round, ": crash point ", point.name, " pass ", pass));
    const absl::Time round_start = absl::Now();
    server.Kill();  // the previous round's server, with no crash point: as any kill -9
    server.set_env({{"KINGFISHER_TEST_CRASH_AT", absl::StrCat(point.name, ":", pass)}});
    server.Launch();
    // A recovery crash may come before the server serves; the others come under the load.
    std::optional<SearchLoad> load;
    if (server.WaitHealthy()) {
      load.emplace(client_.get(), collection_, /*inserts=*/100'000,
                   int64_t{100'000'000} * (round + 1));
    }
    const kf::testing::ProcessResult died = server.WaitForExit(absl::Seconds(60));
    if (load) {
      load->StopWriting();
      load->MarkKill();
    }
    ExpectCrashedAt(died, point.name);
    if (point.then != nullptr) {
      server.set_env({{"KINGFISHER_TEST_CRASH_AT", point.then}});
      server.Launch();
      ExpectCrashedAt(server.WaitForExit(absl::Seconds(60)), point.then);
    }
    server.set_env({});
    ASSERT_TRUE(server.Start()) << server.Output();
    if (load) {
      load->Join();
      total.Merge(*load);
    }
    std::printf("round %d: %s:%d%s%s, %.1f s\n", round, point.name, pass,
                point.then != nullptr ? " then " : "", point.then != nullptr ? point.then : "",
                absl::ToDoubleSeconds(absl::Now() - round_start));
    if (round % 5 == 4) ExpectSearchable(client_.get(), "vecs", total);
  }
  // Rows in every shard: each pchannel commits a checkpoint after the last crash, and its
  // garbage collection removes what the crashes left unnamed.
  {
    SearchLoad last(client_.get(), collection_, 20, int64_t{100'000'000} * (kRounds + 1));
    last.Join();
    total.Merge(last);
  }
  ExpectSearchable(client_.get(), "vecs", total);
  std::printf("%d rounds: %zu live rows, %zu deleted, %zu uncertain\n", kRounds, total.live.size(),
              total.deleted.size(), total.uncertain.size());
  ASSERT_EQ(server.Stop().exit_code, 0);
  const auto [orphans, named] = Orphans(data_dir());
  EXPECT_THAT(orphans, ::testing::IsEmpty());
  EXPECT_GT(named, 0u);
  ExpectEachLogHoldsItsCheckpointsReplay(data_dir());
}

// Recovery storage of the real server on a real Ceph RGW (S3): radosgw stopped while the
// standalone flushes — Inserts are acknowledged all along, flushes fail (object_store_timeout
// 2 s) and are retried — then started again: every sealed segment reaches the bucket; a kill -9 and
// restart loads them from there, and every acknowledged row and delete is as it was.
TEST_F(RecoveryCrashTest, AServerOnCephRgwFlushesAfterAnOutageAndLosesNothing) {
  std::string why_not;
  object::testing::RgwProcess* rgw = object::testing::SharedRgw(&why_not);
  if (rgw == nullptr && why_not.rfind("SKIP:", 0) == 0) GTEST_SKIP() << why_not.substr(5);
  ASSERT_NE(rgw, nullptr) << why_not;
  const object::S3Options s3 = rgw->s3_options();
  const std::string endpoint = s3.endpoint.substr(s3.endpoint.find("://") + 3);
  std::vector<std::string> args = TinyRecoveryStorage();
  // A flush fails within 2 s of radosgw stopping (instead of retrying for 30).
  args.insert(args.end(), {"--object-store-timeout", "2"});
  args.insert(args.end(),
              {"--object-store", absl::StrCat("s3://", s3.access_key, ":", s3.secret_key, "@",
                                              endpoint, "/kfrgw", ::getpid())});
  StartWithCollection({.extra_args = args}, /*shards=*/2);
  if (HasFatalFailure()) return;
  kf::testing::ServerProcess& server = *server_;
  const std::string flushed = SealedSegmentsMetric(collection_.id, "flushed");
  const std::string unflushed = SealedSegmentsMetric(collection_.id, "unflushed");
  auto metric = [&](const std::string& name) {
    return kf::testing::MetricSum(server.http_port(), name);
  };
  RowSets total;
  auto load = [&](int64_t pk_base) {
    SearchLoad l(client_.get(), collection_, /*inserts=*/40, pk_base);
    l.Join();
    total.Merge(l);
  };
  load(100'000'000);
  ASSERT_TRUE(kf::testing::WaitUntil([&] { return metric(flushed) > 0; }, absl::Seconds(60)));

  rgw->StopRgw();
  load(200'000'000);  // acknowledged although nothing can be flushed
  EXPECT_GT(metric(unflushed), 0) << "no segment sealed while radosgw was down";
  const double failures = metric("kf_checkpoint_failures");
  ASSERT_TRUE(kf::testing::WaitUntil([&] { return metric("kf_checkpoint_failures") > failures; },
                                     absl::Seconds(60)))
      << "no flush failed while radosgw was down";
  ASSERT_TRUE(rgw->StartRgw().ok());
  ASSERT_TRUE(kf::testing::WaitUntil([&] { return metric(unflushed) == 0; }, absl::Seconds(120)))
      << "segments sealed during the outage were never flushed";

  server.Kill();
  ASSERT_TRUE(server.Start()) << server.Output();
  ExpectSearchable(client_.get(), "vecs", total);
  EXPECT_GT(metric("kf_recovered_segments"), 0) << "the restart did not load from the bucket";
}

}  // namespace
}  // namespace kf::cluster_testing
