// DdlUnderCoordinatorCrashes (issue 5 acceptance, fixture: cluster_fixture.h): workers create
// and drop collections (and insert into the ones they created) while the coordinator is killed
// with SIGKILL at random points and restarted on the same address, several times.
//
// Each worker owns its names, so it knows which collection id each acknowledged DDL concerned;
// a call that failed ambiguously (UNAVAILABLE, DEADLINE_EXCEEDED: the coordinator died under
// it) is settled later with DescribeCollection. The kill points are random in the sense that
// matters: the coordinator dies after a random number of further acknowledged DDLs, while the
// other workers' DDLs are at whatever step they reached.
//
// Proves, from the metadata store (etcd) and the WALs read from the beginning:
//   - every broadcast task ends DONE and every collection CREATED or DROPPED (the restarted
//     coordinators finished what their predecessors persisted);
//   - every vchannel of every collection holds exactly one CreateCollection, first, and one
//     DropCollection iff the collection is DROPPED, last: each DDL applied exactly once on each
//     of its vchannels, nothing appended after the drop;
//   - the broadcast ids in those messages are the ones the catalog recorded with each state
//     transition (the ACK callback of that very broadcast committed, once: its commit is atomic
//     with the task's DONE and conditioned on the task);
//   - every acknowledged DDL is applied (created ids exist, dropped ids are DROPPED) and every
//     acknowledged Insert is in its vchannel exactly once, at the id its ack named.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "cluster_fixture.h"
#include "kingfisher/collections.h"
#include "kingfisher/v1/ddl.pb.h"
#include "message/message.h"
#include "storage/meta/etcd_meta_store.h"
#include "streaming/cluster_meta.h"

namespace kf::cluster_testing {
namespace {

constexpr int kWorkers = 3;
constexpr int kNamesPerWorker = 2;
constexpr int kKills = 8;
constexpr uint32_t kDim = 4;
constexpr int kRowsPerInsert = 3;

struct AckedInsert {
  std::string vchannel;
  kingfisher::AppendResult result;
};

// What one worker was told; read by the test after the worker joined.
struct History {
  std::vector<int64_t> created;  // ids whose CreateCollection was acknowledged
  std::vector<int64_t> dropped;  // ids whose DropCollection was acknowledged
  std::vector<AckedInsert> inserts;
  int ambiguous = 0;
};

bool Ambiguous(const absl::Status& s) {
  return absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s);
}

std::optional<uint64_t> BroadcastIdOf(const kingfisher::ConsumedMessage& m) {
  MutableMessage copy(m.type, "");
  for (const auto& [k, v] : m.properties) copy.SetProperty(k, v);
  auto h = copy.broadcast_header();
  if (!h.has_value()) return std::nullopt;
  return h->broadcast_id();
}

class DdlCrashTest : public ClusterTest {
 protected:
  // Counts acknowledged DDLs; the kill loop waits on it.
  void CountAck() {
    absl::MutexLock l(&mu_);
    ++acked_ddl_;
  }
  bool WaitAcks(int64_t n, absl::Duration timeout) {
    absl::MutexLock l(&mu_);
    auto reached = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return acked_ddl_ >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&reached), timeout);
  }
  int64_t acked() {
    absl::MutexLock l(&mu_);
    return acked_ddl_;
  }
  // Waits for `d` unless the workers are told to stop first (a retry backoff).
  bool Pause(absl::Duration d) {
    absl::MutexLock l(&mu_);
    auto stopping = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
    return !mu_.AwaitWithTimeout(absl::Condition(&stopping), d);
  }
  bool stopping() {
    absl::MutexLock l(&mu_);
    return stop_;
  }
  void StopWorkers() {
    absl::MutexLock l(&mu_);
    stop_ = true;
  }

  void Work(int w, History* h);

  absl::Mutex mu_;
  int64_t acked_ddl_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
};

void DdlCrashTest::Work(int w, History* h) {
  kingfisher::ClientOptions o;
  o.endpoint = coord_->address();
  o.ddl_timeout = std::chrono::seconds(20);
  o.status_timeout = std::chrono::seconds(5);
  o.append_timeout = std::chrono::seconds(60);
  auto client = kingfisher::Client::Connect(o);
  ASSERT_TRUE(client.ok()) << client.status();
  auto producer = (*client)->CreateProducer();
  ASSERT_TRUE(producer.ok()) << producer.status();
  std::mt19937 rng(1000 + w);
  // name -> the collection it names, when known (nullopt: known not to exist).
  std::map<std::string, std::optional<kingfisher::CollectionInfo>> known;
  int64_t next_pk = int64_t{w} * 1'000'000'000;

  while (!stopping()) {
    const std::string name = absl::StrCat("w", w, "_", rng() % kNamesPerWorker);
    auto it = known.find(name);
    if (it == known.end()) {  // settle an ambiguous outcome
      auto d = (*client)->DescribeCollection(name);
      if (absl::IsNotFound(d.status())) {
        known[name] = std::nullopt;
      } else if (d.ok() && d->state == "CREATED") {
        known[name] = *d;
      } else {  // unreachable, or a DDL on it is still being completed
        Pause(absl::Milliseconds(100));
      }
      continue;
    }
    if (!it->second.has_value()) {
      kingfisher::CollectionSpec spec{
          .name = name, .dim = kDim, .shards = static_cast<uint32_t>(1 + rng() % 3)};
      auto c = (*client)->CreateCollection(spec);
      if (c.ok()) {
        h->created.push_back(c->id);
        CountAck();
        it->second = *c;
        continue;
      }
      ASSERT_TRUE(Ambiguous(c.status()) || absl::IsAlreadyExists(c.status())) << c.status();
      ++h->ambiguous;
      known.erase(it);
      Pause(absl::Milliseconds(100));
      continue;
    }
    // Created: insert a few rows, then drop it.
    const kingfisher::CollectionInfo info = *it->second;
    std::vector<int64_t> pks;
    for (int i = 0; i < kRowsPerInsert; ++i) pks.push_back(next_pk++);
    auto messages = kingfisher::InsertMessages(info, pks, std::vector<float>(pks.size() * kDim));
    ASSERT_TRUE(messages.ok()) << messages.status();
    for (auto& m : *messages) {
      const std::string vchannel = m.vchannel;
      auto r = (*producer)->AppendSync(std::move(m));
      // Only this worker drops its collections, so a refusal would be a bug.
      ASSERT_TRUE(r.ok() || Ambiguous(r.status())) << vchannel << ": " << r.status();
      if (r.ok()) h->inserts.push_back({vchannel, *r});
    }
    absl::Status d = (*client)->DropCollection(name);
    if (d.ok()) {
      h->dropped.push_back(info.id);
      CountAck();
      it->second = std::nullopt;
      continue;
    }
    ASSERT_TRUE(Ambiguous(d) || absl::IsNotFound(d)) << d;
    ++h->ambiguous;
    known.erase(it);
    Pause(absl::Milliseconds(100));
  }
}

TEST_F(DdlCrashTest, EveryAcceptedDdlAppliesOnceAcrossCoordinatorKills) {
  std::vector<History> histories(kWorkers);
  std::vector<std::thread> workers;
  for (int w = 0; w < kWorkers; ++w)
    workers.emplace_back([this, w, &histories] { Work(w, &histories[w]); });

  std::mt19937 rng(7);
  for (int k = 0; k < kKills; ++k) {
    const int64_t target = acked() + 1 + rng() % 5;
    ASSERT_TRUE(WaitAcks(target, absl::Seconds(90))) << "DDL stalled before kill " << k << "\n"
                                                     << coord_->Output();
    coord_->Kill();
    ASSERT_TRUE(coord_->Start()) << coord_->Output();
  }
  ASSERT_TRUE(WaitAcks(acked() + 3, absl::Seconds(90))) << "DDL did not resume\n"
                                                        << coord_->Output();
  StopWorkers();
  for (auto& t : workers) t.join();
  if (HasFatalFailure()) return;

  // Every task DONE: the last coordinator finished what its predecessors persisted.
  const streaming::ClusterKeys keys(kCluster);
  meta::EtcdMetaStore::Options eo;
  eo.endpoints = {etcd_.endpoint()};
  auto store = meta::EtcdMetaStore::Create(eo);
  ASSERT_TRUE(store.ok()) << store.status();
  std::map<uint64_t, kingfisher::v1::BroadcastTask> tasks;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(60);;) {
    auto range = (*store)->Range(keys.broadcast_tasks_prefix(), absl::Now() + absl::Seconds(5));
    ASSERT_TRUE(range.ok()) << range.status();
    tasks.clear();
    int unfinished = 0;
    for (const auto& kv : range->kvs) {
      auto t = streaming::ParseBroadcastTask(keys, kv.key, kv.value);
      ASSERT_TRUE(t.ok()) << t.status();
      unfinished += t->state() != kingfisher::v1::BROADCAST_DONE;
      tasks[t->broadcast_id()] = *t;
    }
    if (unfinished == 0) break;
    ASSERT_LT(absl::Now(), deadline) << unfinished << " broadcast tasks never completed\n"
                                     << coord_->Output();
    absl::SleepFor(absl::Milliseconds(100));  // polling the store, bounded by the deadline
  }

  std::map<int64_t, kingfisher::v1::CollectionInfo> collections;
  {
    auto range = (*store)->Range(keys.collections_prefix(), absl::Now() + absl::Seconds(5));
    ASSERT_TRUE(range.ok()) << range.status();
    for (const auto& kv : range->kvs) {
      auto c = streaming::ParseCollectionInfo(keys, kv.key, kv.value);
      ASSERT_TRUE(c.ok()) << c.status();
      collections[c->schema().collection_id()] = *c;
    }
  }

  // Every message of every collection vchannel, in log order.
  std::map<std::string, std::vector<kingfisher::ConsumedMessage>> by_vchannel;
  for (int p = 0; p < kPChannels; ++p) {
    for (auto& m : ReadPChannelToEnd(p)) {
      if (m.type != kingfisher::MessageType::kTimeTick)
        by_vchannel[m.vchannel].push_back(std::move(m));
    }
  }

  int dropped = 0;
  for (const auto& [id, c] : collections) {
    const bool is_dropped = c.state() == kingfisher::v1::COLLECTION_DROPPED;
    ASSERT_TRUE(is_dropped || c.state() == kingfisher::v1::COLLECTION_CREATED)
        << "collection " << id << " left in state " << c.state();
    dropped += is_dropped;
    ASSERT_TRUE(tasks.count(c.create_broadcast_id())) << "collection " << id;
    if (is_dropped) {
      ASSERT_TRUE(tasks.count(c.drop_broadcast_id())) << "collection " << id;
    }
    for (const std::string& v : c.schema().vchannels()) {
      const auto& log = by_vchannel[v];
      ASSERT_FALSE(log.empty()) << v;
      int creates = 0, drops = 0;
      for (size_t i = 0; i < log.size(); ++i) {
        const auto& m = log[i];
        if (m.type == kingfisher::MessageType::kCreateCollection) {
          ++creates;
          EXPECT_EQ(i, 0u) << v << ": CreateCollection is not the first message";
          EXPECT_EQ(BroadcastIdOf(m), c.create_broadcast_id()) << v;
        } else if (m.type == kingfisher::MessageType::kDropCollection) {
          ++drops;
          EXPECT_EQ(i, log.size() - 1)
              << v << ": " << log.size() - 1 - i << " messages after DropCollection";
          EXPECT_EQ(BroadcastIdOf(m), c.drop_broadcast_id()) << v;
        } else {
          EXPECT_EQ(m.type, kingfisher::MessageType::kInsert) << v;
        }
      }
      EXPECT_EQ(creates, 1) << v;
      EXPECT_EQ(drops, is_dropped ? 1 : 0) << v;
    }
  }

  int acked_ddl = 0, ambiguous = 0, inserts = 0;
  for (const History& h : histories) {
    for (int64_t id : h.created) EXPECT_TRUE(collections.count(id)) << "created " << id;
    for (int64_t id : h.dropped) {
      ASSERT_TRUE(collections.count(id)) << "dropped " << id;
      EXPECT_EQ(collections[id].state(), kingfisher::v1::COLLECTION_DROPPED) << id;
    }
    for (const AckedInsert& a : h.inserts) {
      const auto& log = by_vchannel[a.vchannel];
      EXPECT_EQ(
          std::count_if(log.begin(), log.end(), [&](const auto& m) { return m.id == a.result.id; }),
          1)
          << a.vchannel << " " << a.result.id;
    }
    acked_ddl += h.created.size() + h.dropped.size();
    ambiguous += h.ambiguous;
    inserts += h.inserts.size();
  }
  std::printf(
      "%d kills: %d DDL acknowledged, %d ambiguous; %zu collections (%d dropped), "
      "%zu broadcast tasks, %d inserts acknowledged\n",
      kKills, acked_ddl, ambiguous, collections.size(), dropped, tasks.size(), inserts);
}

}  // namespace
}  // namespace kf::cluster_testing
