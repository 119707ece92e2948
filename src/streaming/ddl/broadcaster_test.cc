#include "streaming/ddl/broadcaster.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/errors.h"
#include "message/validate.h"
#include "streaming/ddl/broadcast_task.h"
#include "streaming/ddl/testing/ddl_test_util.h"

namespace kf::streaming::ddl {
namespace {

using kingfisher::v1::BroadcastTask;

const std::vector<std::string> kVChannels = {"kf-dml_0_7v0", "kf-dml_1_7v1", "kf-dml_2_7v2"};

class BroadcasterTest : public testing::DdlTest {
 protected:
  static Broadcaster::Options Opts() {
    Broadcaster::Options o;
    o.retry_backoff = absl::Milliseconds(1);
    o.retry_backoff_max = absl::Milliseconds(5);
    return o;
  }

  // Recovered and with the counting callback for CreateCollection.
  std::unique_ptr<Broadcaster> New(meta::MetaStore* store, int64_t revision,
                                   Broadcaster::Options o = Opts()) {
    auto b = std::make_unique<Broadcaster>(store, keys_, revision, &appender_, o);
    b->RegisterCallback(MessageType::kCreateCollection, Counting());
    absl::Status s = b->Recover(Deadline());
    EXPECT_TRUE(s.ok()) << s;
    return b;
  }

  std::string AppliedKey(uint64_t id) const {
    return absl::StrCat(keys_.root(), "test/applied/", id);
  }
  // The callback's effect: a per-broadcast counter raised by one per committed run, so a
  // callback committed twice shows as 2.
  AckCallback Counting() {
    return [this](const AckCallbackContext& c) -> absl::StatusOr<AckWrites> {
      ++callback_runs_;
      const std::string key = AppliedKey(c.task.broadcast_id());
      int64_t n = 0;
      int64_t rev = 0;
      auto got = faulty_->Get(key, Deadline());
      if (got.ok()) {
        EXPECT_TRUE(absl::SimpleAtoi(got->kv.value, &n));
        rev = got->kv.mod_revision;
      } else if (!absl::IsNotFound(got.status())) {
        return got.status();
      }
      return AckWrites{{meta::Compare::ModRevisionIs(key, rev)},
                       {meta::Op::Put(key, absl::StrCat(n + 1))}};
    };
  }
  int64_t Applied(uint64_t id) const {
    auto got = store_->Get(AppliedKey(id), Deadline());
    int64_t n = 0;
    if (got.ok()) {
      EXPECT_TRUE(absl::SimpleAtoi(got->kv.value, &n));
    }
    return n;
  }

  static Broadcaster::Request Req(std::vector<std::string> vchannels = kVChannels) {
    kingfisher::v1::CollectionSchema schema;
    schema.set_name("c");
    schema.set_collection_id(7);
    schema.set_dim(4);
    schema.set_metric(kingfisher::v1::L2);
    schema.set_shards(static_cast<uint32_t>(vchannels.size()));
    for (const auto& v : vchannels) schema.add_vchannels(v);
    Broadcaster::Request r;
    r.message = MutableMessage(MessageType::kCreateCollection, schema.SerializeAsString());
    r.vchannels = std::move(vchannels);
    return r;
  }

  absl::StatusOr<Broadcaster::Result> Run(Broadcaster& b, std::string_view collection = "c",
                                          Broadcaster::Request r = Req()) {
    auto locks = b.Lock({ResourceKey::Collection("default", collection)}, false, Deadline());
    if (!locks.ok()) return locks.status();
    return b.Broadcast(*std::move(locks), std::move(r), Deadline());
  }

  std::optional<BroadcastTask> Task(uint64_t id) const {
    auto got = store_->Get(keys_.broadcast_task(id), Deadline());
    if (!got.ok()) return std::nullopt;
    auto t = ParseBroadcastTask(keys_, got->kv.key, got->kv.value);
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() ? std::optional<BroadcastTask>(*t) : std::nullopt;
  }

  // Messages locking `collection` appended (deduplicated) to `vchannel`.
  size_t AppendedFor(const std::string& vchannel, const std::string& collection) const {
    size_t n = 0;
    for (const auto& m : appender_.log(vchannel)) {
      if (m.broadcast_header()->resource_keys(0).key() == "default/" + collection) ++n;
    }
    return n;
  }
  // Messages of broadcast `id` appended (deduplicated) to `vchannel`.
  size_t Appended(const std::string& vchannel, uint64_t id) const {
    size_t n = 0;
    for (const auto& m : appender_.log(vchannel)) {
      if (m.broadcast_header() && m.broadcast_header()->broadcast_id() == id) ++n;
    }
    return n;
  }

  testing::FakeAppender appender_;
  std::atomic<int> callback_runs_{0};
};

TEST_F(BroadcasterTest, PersistsTheTaskBeforeTheFirstAppend) {
  auto b = New(faulty_.get(), revision_);
  std::atomic<int> checked{0};
  appender_.set_hook([&](const MutableMessage& m) {
    if (checked++ > 0) return;
    auto id = m.broadcast_header()->broadcast_id();
    auto task = Task(id);
    ASSERT_TRUE(task.has_value()) << "appended before the task was persisted";
    EXPECT_EQ(task->state(), kingfisher::v1::BROADCAST_PENDING);
    EXPECT_EQ(task->acks_size(), 0);
    auto persisted = TaskMessage(*task);
    ASSERT_TRUE(persisted.ok());
    EXPECT_TRUE(persisted->HasProperty(prop::kTraceContext));
    EXPECT_FALSE(persisted->HasProperty(prop::kVChannel));
    EXPECT_FALSE(persisted->HasProperty(prop::kIdempotencyKey));
  });
  auto r = Run(*b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(checked.load(), 3);
}

TEST_F(BroadcasterTest, AppendsEveryVChannelWithStableKeysThenRunsTheCallbackOnce) {
  auto b = New(faulty_.get(), revision_);
  auto r = Run(*b);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->acks.size(), 3u);
  for (size_t i = 0; i < kVChannels.size(); ++i) {
    EXPECT_EQ(r->acks[i].vchannel(), kVChannels[i]);
    auto log = appender_.log(kVChannels[i]);
    ASSERT_EQ(log.size(), 1u);
    const MutableMessage& m = log[0];
    EXPECT_TRUE(ValidateProducedMessage(m).ok()) << ValidateProducedMessage(m);
    EXPECT_EQ(m.vchannel(), kVChannels[i]);
    EXPECT_EQ(*m.idempotency_key(), absl::StrCat("bc", r->broadcast_id, ":", i + 1));
    auto h = m.broadcast_header();
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(h->broadcast_id(), r->broadcast_id);
    EXPECT_EQ(std::vector<std::string>(h->vchannels().begin(), h->vchannels().end()), kVChannels);
    ASSERT_EQ(h->resource_keys_size(), 1);
    EXPECT_EQ(h->resource_keys(0).domain(), "collection");
    EXPECT_EQ(h->resource_keys(0).key(), "default/c");
  }
  auto task = Task(r->broadcast_id);
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(task->state(), kingfisher::v1::BROADCAST_DONE);
  EXPECT_EQ(task->acks_size(), 3);
  EXPECT_GT(task->done_time_ms(), 0);
  EXPECT_EQ(Applied(r->broadcast_id), 1);
  EXPECT_EQ(callback_runs_.load(), 1);

  // Ids come from the persisted counter.
  auto r2 = Run(*b, "d");
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ(r2->broadcast_id, r->broadcast_id + 1);
}

TEST_F(BroadcasterTest, RetriesFailedVChannelsUntilAllSucceed) {
  auto b = New(faulty_.get(), revision_);
  std::map<std::string, int> failures = {{kVChannels[1], 5}, {kVChannels[2], 2}};
  absl::Mutex mu;
  appender_.set_policy([&](const MutableMessage& m) -> absl::Status {
    absl::MutexLock l(&mu);
    int& left = failures[std::string(m.vchannel())];
    if (left == 0) return absl::OkStatus();
    --left;
    return left % 2 ? absl::UnavailableError("node down") : FencedError("moving");
  });
  auto r = Run(*b);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const auto& v : kVChannels) EXPECT_EQ(appender_.log(v).size(), 1u) << v;
  std::map<std::string, int> calls;
  for (const auto& c : appender_.calls()) ++calls[std::string(c.message.vchannel())];
  EXPECT_EQ(calls[kVChannels[0]], 1);  // an acked vchannel is not appended again
  EXPECT_EQ(calls[kVChannels[1]], 6);
  EXPECT_EQ(calls[kVChannels[2]], 3);
  EXPECT_EQ(Applied(r->broadcast_id), 1);
}

// docs/ddl-node.md: a vchannel that dropped the collection already refuses a DropCollection
// with COLLECTION_NOT_FOUND; that vchannel is done (an ack without a message id), not retried.
TEST_F(BroadcasterTest, ADropRefusedAsAlreadyDroppedCountsAsDone) {
  auto b = New(faulty_.get(), revision_);
  std::atomic<int> runs{0};
  b->RegisterCallback(MessageType::kDropCollection,
                      [&](const AckCallbackContext&) -> absl::StatusOr<AckWrites> {
                        ++runs;
                        return AckWrites{};
                      });
  appender_.set_policy([](const MutableMessage& m) -> absl::Status {
    if (m.vchannel() != kVChannels[1]) return absl::OkStatus();
    return StreamingError(StreamingCode::kCollectionNotFound, "collection 7 was dropped");
  });
  kingfisher::v1::DropCollection drop;
  drop.set_collection_id(7);
  Broadcaster::Request req = Req();
  req.message = MutableMessage(MessageType::kDropCollection, drop.SerializeAsString());
  auto r = Run(*b, "c", std::move(req));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->acks.size(), 3u);
  EXPECT_FALSE(r->acks[0].message_id().empty());
  EXPECT_EQ(r->acks[1].vchannel(), kVChannels[1]);
  EXPECT_TRUE(r->acks[1].message_id().empty());
  EXPECT_EQ(r->acks[1].timetick(), 0u);
  EXPECT_FALSE(r->acks[2].message_id().empty());
  EXPECT_EQ(appender_.calls().size(), 3u);  // refused once, never retried
  EXPECT_TRUE(appender_.log(kVChannels[1]).empty());
  EXPECT_EQ(Task(r->broadcast_id)->state(), kingfisher::v1::BROADCAST_DONE);
  EXPECT_EQ(runs.load(), 1);

  // Any other DDL refused so is a failure and retried.
  int refusals = 2;
  appender_.set_policy([&refusals](const MutableMessage& m) -> absl::Status {
    if (m.vchannel() != kVChannels[1] || refusals == 0) return absl::OkStatus();
    --refusals;
    return StreamingError(StreamingCode::kCollectionNotFound, "no such collection");
  });
  auto created = Run(*b, "d");
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_FALSE(created->acks[1].message_id().empty());
  EXPECT_EQ(appender_.calls().size(), 3u + 5u);  // vchannel 1: refused twice, then appended
}

TEST_F(BroadcasterTest, BadRequestsChangeNothing) {
  auto b = New(faulty_.get(), revision_);
  const auto before = Dump();
  auto expect_invalid = [&](Broadcaster::Request r, const std::string& what) {
    auto got = Run(*b, "c", std::move(r));
    EXPECT_EQ(got.status().code(), absl::StatusCode::kInvalidArgument) << what << got.status();
  };
  Broadcaster::Request insert = Req();
  insert.message = MutableMessage(MessageType::kInsert, "");
  expect_invalid(std::move(insert), "not DDL");
  Broadcaster::Request with_vc = Req();
  with_vc.message.set_vchannel(kVChannels[0]);
  expect_invalid(std::move(with_vc), "_vc set");
  Broadcaster::Request with_ik = Req();
  with_ik.message.set_idempotency_key("p:1");
  expect_invalid(std::move(with_ik), "_ik set");
  expect_invalid(Req({kVChannels[0], kVChannels[0]}), "duplicate vchannel");
  expect_invalid(Req({"no-pchannel"}), "malformed vchannel");
  expect_invalid(Req({}), "no vchannels");
  EXPECT_EQ(b->Broadcast(ResourceKeyLocks::Guard(), Req(), Deadline()).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Dump(), before);
  EXPECT_TRUE(appender_.calls().empty());
}

TEST_F(BroadcasterTest, SameKeyIsSerialisedOtherKeysAreNot) {
  auto b = New(faulty_.get(), revision_);
  appender_.Hold(true);
  absl::StatusOr<Broadcaster::Result> first = absl::UnknownError("unset");
  std::thread t1([&] { first = Run(*b, "c"); });
  ASSERT_TRUE(appender_.WaitCalls(3, Deadline()));

  // The task holds its lock until DONE.
  auto busy = b->Lock({ResourceKey::Collection("default", "c")}, /*blocking=*/false, Deadline());
  EXPECT_EQ(GetStreamingCode(busy.status()), StreamingCode::kResourceAcquired);
  auto other = b->Lock({ResourceKey::Collection("default", "d")}, false, Deadline());
  EXPECT_TRUE(other.ok()) << other.status();
  other->Release();

  // A blocking DDL on the same key starts only after the first one's callback committed.
  std::atomic<bool> first_done_at_second_append{false};
  appender_.set_hook([&](const MutableMessage& m) {
    if (m.broadcast_header()->broadcast_id() != 2) return;
    auto t = Task(1);
    first_done_at_second_append = t && t->state() == kingfisher::v1::BROADCAST_DONE;
  });
  absl::StatusOr<Broadcaster::Result> second = absl::UnknownError("unset");
  std::thread t2([&] {
    auto locks = b->Lock({ResourceKey::Collection("default", "c")}, /*blocking=*/true, Deadline());
    ASSERT_TRUE(locks.ok()) << locks.status();
    second = b->Broadcast(*std::move(locks), Req(), Deadline());
  });
  appender_.Hold(false);
  t1.join();
  t2.join();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->broadcast_id, 1u);
  EXPECT_EQ(second->broadcast_id, 2u);
  EXPECT_TRUE(first_done_at_second_append.load());
  EXPECT_TRUE(b->Lock({ResourceKey::Collection("default", "c")}, false, Deadline()).ok());
}

TEST_F(BroadcasterTest, ADeposedCoordinatorWritesNothing) {
  auto b = New(faulty_.get(), revision_);
  const int64_t successor = TakeOffice();
  const auto before = Dump();
  auto r = Run(*b);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(Dump(), before);
  EXPECT_TRUE(appender_.calls().empty());

  // The successor works.
  auto b2 = New(faulty_.get(), successor);
  EXPECT_TRUE(Run(*b2).ok());
}

TEST_F(BroadcasterTest, DeposedMidTaskTheSuccessorCompletesIt) {
  auto b = New(faulty_.get(), revision_);
  appender_.Hold(true);
  absl::StatusOr<Broadcaster::Result> r = absl::UnknownError("unset");
  std::thread t([&] { r = Run(*b); });
  ASSERT_TRUE(appender_.WaitCalls(3, Deadline()));
  const int64_t successor = TakeOffice();
  appender_.Hold(false);
  t.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  auto task = Task(1);
  ASSERT_TRUE(task.has_value());
  EXPECT_EQ(task->state(), kingfisher::v1::BROADCAST_PENDING);  // the acks were fenced off
  EXPECT_EQ(Applied(1), 0);
  b.reset();

  auto b2 = New(faulty_.get(), successor);
  ASSERT_TRUE(b2->WaitIdle(Deadline()));
  EXPECT_EQ(Task(1)->state(), kingfisher::v1::BROADCAST_DONE);
  EXPECT_EQ(Applied(1), 1);
  for (const auto& v : kVChannels) EXPECT_EQ(Appended(v, 1), 1u) << v;
}

// A coordinator crash at each store write of a broadcast (the write lost, or applied with
// the answer lost), then a new coordinator recovering: every accepted broadcast is appended
// once per vchannel and its callback committed once; a refused one left nothing.
TEST_F(BroadcasterTest, CrashAtEveryWriteAppliesExactlyOnce) {
  // A broadcast's writes: id counter (one id per block here), task, callback with the acks
  // (+DONE).
  constexpr int kWrites = 3;
  Broadcaster::Options o = Opts();
  o.id_block_size = 1;
  int iteration = 0;
  for (bool applied : {false, true}) {
    for (int k = 1; k <= kWrites; ++k) {
      SCOPED_TRACE(absl::StrCat("crash at write ", k, applied ? " (applied)" : " (lost)"));
      const std::string collection = absl::StrCat("c", ++iteration);
      auto b = New(faulty_.get(), revision_, o);
      faulty_->CrashAtTxn(k, applied);
      absl::StatusOr<Broadcaster::Result> r = absl::UnknownError("unset");
      std::thread t([&] { r = Run(*b, collection); });
      ASSERT_TRUE(faulty_->WaitCrashed(Deadline()));
      b->Stop();  // the process dies: its worker is gone, the store keeps what it has
      t.join();
      EXPECT_FALSE(r.ok());
      b.reset();
      faulty_->SetDown(false);

      auto b2 = New(faulty_.get(), revision_, o);
      ASSERT_TRUE(b2->WaitIdle(Deadline()));
      auto counter = store_->Get(keys_.broadcast_next_id(), Deadline());
      uint64_t last = 0;
      if (counter.ok()) {
        ASSERT_TRUE(absl::SimpleAtoi(counter->kv.value, &last));
      }
      // The task of this iteration, if any, has the highest id.
      auto task = last > 0 ? Task(last) : std::nullopt;
      const bool accepted =
          task.has_value() &&
          TaskMessage(*task)->broadcast_header()->resource_keys(0).key() == "default/" + collection;
      if (accepted) {
        EXPECT_EQ(task->state(), kingfisher::v1::BROADCAST_DONE);
        EXPECT_EQ(Applied(last), 1);
        for (const auto& v : kVChannels) EXPECT_EQ(Appended(v, last), 1u) << v;
      } else {
        // Lost before the task was persisted: nothing of it was appended.
        for (const auto& v : kVChannels) EXPECT_EQ(AppendedFor(v, collection), 0u) << v;
      }
      EXPECT_EQ(accepted, k > 2 || (k == 2 && applied));
    }
  }
}

TEST_F(BroadcasterTest, CrashDuringAppendsResumesWithTheSameKeys) {
  auto b = New(faulty_.get(), revision_);
  appender_.Hold(true);  // applied on the nodes, acks never arrive
  absl::StatusOr<Broadcaster::Result> r = absl::UnknownError("unset");
  std::thread t([&] { r = Run(*b); });
  ASSERT_TRUE(appender_.WaitCalls(3, Deadline()));
  b->Stop();
  t.join();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
  b.reset();
  appender_.Hold(false);  // the lost acks reach nobody
  EXPECT_EQ(Task(1)->acks_size(), 0);

  auto b2 = New(faulty_.get(), revision_);
  ASSERT_TRUE(b2->WaitIdle(Deadline()));
  EXPECT_EQ(Task(1)->state(), kingfisher::v1::BROADCAST_DONE);
  auto calls = appender_.calls();
  ASSERT_EQ(calls.size(), 6u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(*calls[i].message.idempotency_key(), *calls[i + 3].message.idempotency_key());
  }
  for (const auto& v : kVChannels) EXPECT_EQ(Appended(v, 1), 1u) << v;
  EXPECT_EQ(Applied(1), 1);
}

TEST_F(BroadcasterTest, AFailingCallbackIsRetriedAndCommitsOnce) {
  auto b = std::make_unique<Broadcaster>(faulty_.get(), keys_, revision_, &appender_, Opts());
  std::atomic<int> runs{0};
  AckCallback counting = Counting();
  b->RegisterCallback(MessageType::kCreateCollection,
                      [&](const AckCallbackContext& c) -> absl::StatusOr<AckWrites> {
                        if (++runs <= 2) return absl::UnavailableError("catalog unreachable");
                        // Then the commit is applied but its answer lost: not run again.
                        faulty_->FailNextTxns(1, absl::UnavailableError("lost answer"), true);
                        return counting(c);
                      });
  ASSERT_TRUE(b->Recover(Deadline()).ok());
  auto r = Run(*b);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(runs.load(), 3);
  EXPECT_EQ(Applied(r->broadcast_id), 1);
}

TEST_F(BroadcasterTest, TombstonesAreBoundedByCountAndAge) {
  Broadcaster::Options o = Opts();
  o.tombstone_max_count = 2;
  auto b = New(faulty_.get(), revision_, o);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Run(*b, absl::StrCat("c", i)).ok());
  ASSERT_TRUE(b->WaitIdle(Deadline()));
  auto range = store_->Range(keys_.broadcast_tasks_prefix(), Deadline());
  ASSERT_TRUE(range.ok());
  ASSERT_EQ(range->kvs.size(), 2u);
  EXPECT_EQ(range->kvs[0].key, keys_.broadcast_task(4));
  EXPECT_EQ(range->kvs[1].key, keys_.broadcast_task(5));
  b.reset();

  o.tombstone_max_count = 100;
  o.tombstone_max_age = absl::ZeroDuration();
  auto b2 = New(faulty_.get(), revision_, o);  // Recover trims too
  range = store_->Range(keys_.broadcast_tasks_prefix(), Deadline());
  ASSERT_TRUE(range.ok());
  EXPECT_TRUE(range->kvs.empty());
}

TEST_F(BroadcasterTest, NotRecoveredOrStoppedRefusesWork) {
  Broadcaster b(faulty_.get(), keys_, revision_, &appender_, Opts());
  EXPECT_EQ(b.Lock({ResourceKey::Cluster()}, false, Deadline()).status().code(),
            absl::StatusCode::kUnavailable);
  ASSERT_TRUE(b.Recover(Deadline()).ok());
  EXPECT_EQ(b.Recover(Deadline()).code(), absl::StatusCode::kFailedPrecondition);
  b.Stop();
  EXPECT_EQ(b.Lock({ResourceKey::Cluster()}, false, Deadline()).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace kf::streaming::ddl
