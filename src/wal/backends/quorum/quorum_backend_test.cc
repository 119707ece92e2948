// The quorum backend over in-process logstores on loopback gRPC: appends and reads, segment
// rolls, recovery by a new writer, a lost logstore, a lost quorum, ensemble replacement,
// reading uploaded segments, truncation.
#include "wal/backends/quorum/quorum_backend.h"

#include <algorithm>
#include <set>

#include "absl/synchronization/notification.h"
#include "common/errors.h"
#include "common/metrics/histogram.h"
#include "common/testing/wait_until.h"
#include "format/segment_object.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wal/backends/quorum/quorum_meta.h"
#include "wal/backends/quorum/test_util.h"

namespace kf::wal::quorum {
namespace {

using testing::AppendSync;
using testing::QuorumEnv;
using testing::ReadAll;
using testing::ReadN;
using testing::Writer;

std::string Payload(int i) { return "payload-" + std::to_string(i); }

// Appends `n` entries with payloads from `first`, all in flight at once; returns their ids.
std::vector<MessageId> AppendMany(WalBackend* b, int first, int n) {
  std::vector<std::promise<absl::Status>> done(static_cast<size_t>(n));
  std::vector<MessageId> ids;
  for (int i = 0; i < n; ++i) {
    auto id = b->Append(Payload(first + i),
                        [&done, i](absl::Status s) { done[static_cast<size_t>(i)].set_value(s); });
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return ids;
    ids.push_back(*id);
  }
  for (auto& d : done) EXPECT_TRUE(d.get_future().get().ok());
  return ids;
}

void ExpectPayloads(const std::vector<Entry>& entries, int first, int n) {
  ASSERT_EQ(entries.size(), static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) EXPECT_EQ(entries[static_cast<size_t>(i)].data, Payload(first + i));
  for (size_t i = 1; i < entries.size(); ++i) EXPECT_LT(entries[i - 1].id, entries[i].id);
}

TEST(QuorumBackendTest, AppendsAreReadBackInOrder) {
  QuorumEnv env(3);
  auto opener = NewQuorumOpener(env.Options());
  auto b = opener->Open(Writer("ch", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  auto ids = AppendMany(b->get(), 0, 100);
  ASSERT_EQ(ids.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(ids[i], MessageId(WalKind::kQuorum, 0, i));
  EXPECT_EQ((*b)->NextId(), MessageId(WalKind::kQuorum, 0, 100));
  auto all = ReadN(b->get(), {}, 100);
  ASSERT_TRUE(all.ok()) << all.status();
  ExpectPayloads(*all, 0, 100);
  // From / after an id.
  auto from = ReadN(b->get(), {ReadOptions::Start::kFrom, ids[40]}, 60);
  ASSERT_TRUE(from.ok());
  ExpectPayloads(*from, 40, 60);
  auto after = ReadN(b->get(), {ReadOptions::Start::kAfter, ids[40]}, 59);
  ASSERT_TRUE(after.ok());
  ExpectPayloads(*after, 41, 59);
  // A tailing scanner sees a later append.
  auto scanner = (*b)->Read({ReadOptions::Start::kLatest});
  ASSERT_TRUE(scanner.ok());
  ASSERT_TRUE(AppendSync(b->get(), "late").ok());
  auto e = (*scanner)->Next(absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->data, "late");
  EXPECT_TRUE(absl::IsDeadlineExceeded((*scanner)->Next(absl::Now()).status()));
  ASSERT_TRUE((*b)->Close().ok());
  EXPECT_TRUE(absl::IsCancelled((*b)->Append("x", nullptr).status()));
}

// Each member's successful AddEntries is one flush (OpenOptions::flush_duration): an append is
// acknowledged after two of the three, and no member sends an entry twice here.
TEST(QuorumBackendTest, EachMembersAddEntriesIsObservedAsAFlush) {
  QuorumEnv env(3);
  metrics::Histogram flushes(&metrics::LatencyBucketsSeconds());
  OpenOptions open = Writer("ch", 1);
  open.flush_duration = &flushes;
  auto opener = NewQuorumOpener(env.Options());  // its backends borrow its options and pool
  auto b = opener->Open(open);
  ASSERT_TRUE(b.ok()) << b.status();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(AppendSync(b->get(), Payload(i)).ok());
  EXPECT_GE(flushes.Read().count, 6u);
  ASSERT_TRUE((*b)->Close().ok());
  EXPECT_LE(flushes.Read().count, 9u);
}

TEST(QuorumBackendTest, RollsSegmentsAndSpreadsEnsembles) {
  QuorumEnv env(4);
  auto options = env.Options();
  options.segment_bytes = 200;  // ~20 entries per segment
  auto opener = NewQuorumOpener(options);
  auto b = opener->Open(Writer("ch", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  for (int i = 0; i < 100; i += 10) AppendMany(b->get(), i, 10);
  EXPECT_GT((*b)->NextId().segment(), 2u);
  auto all = ReadN(b->get(), {}, 100);
  ASSERT_TRUE(all.ok()) << all.status();
  ExpectPayloads(*all, 0, 100);
  QuorumMeta meta(env.meta(), options.meta_prefix, "ch");
  auto segments = meta.List(absl::InfiniteFuture());
  ASSERT_TRUE(segments.ok());
  std::set<std::string> used;
  for (const auto& [id, rec] : *segments) {
    EXPECT_EQ(rec.meta.ensemble_size(), 3);
    for (const auto& a : rec.meta.ensemble()) used.insert(a);
    if (id != segments->rbegin()->first) {
      EXPECT_TRUE(rec.meta.sealed());
    }
  }
  EXPECT_EQ(used.size(), 4u);  // rotated over all logstores
  ASSERT_TRUE((*b)->Close().ok());
}

TEST(QuorumBackendTest, NewWriterRecoversTailAndLowerTermIsFenced) {
  QuorumEnv env(3);
  auto opener = NewQuorumOpener(env.Options());
  {
    auto b = opener->Open(Writer("ch", 1));
    ASSERT_TRUE(b.ok()) << b.status();
    AppendMany(b->get(), 0, 50);
    // No Close: the writer "crashes" (its threads stop, nothing is sealed).
    b->reset();
  }
  auto b2 = opener->Open(Writer("ch", 2));
  ASSERT_TRUE(b2.ok()) << b2.status();
  EXPECT_EQ((*b2)->NextId(), MessageId(WalKind::kQuorum, 1, 0));
  AppendMany(b2->get(), 50, 10);
  auto all = ReadN(b2->get(), {}, 60);
  ASSERT_TRUE(all.ok()) << all.status();
  ExpectPayloads(*all, 0, 60);
  EXPECT_TRUE(IsFenced(opener->Open(Writer("ch", 1)).status()));
  // A reader in another opener sees everything.
  auto reader_opener = NewQuorumOpener(env.Options());
  OpenOptions ro = Writer("ch", 0);
  ro.read_only = true;
  auto r = reader_opener->Open(ro);
  ASSERT_TRUE(r.ok()) << r.status();
  auto read = ReadN(r->get(), {}, 60);
  ASSERT_TRUE(read.ok()) << read.status();
  ExpectPayloads(*read, 0, 60);
  ASSERT_TRUE((*b2)->Close().ok());
}

// Recovery repairs a tail that only one replica holds, so what it declares durable is on 2.
TEST(QuorumBackendTest, RecoveryReplicatesATailOnOneReplica) {
  QuorumEnv env(3);
  auto options = env.Options();
  std::atomic<bool> only_first{false};
  std::string first_address = env.addresses()[0];
  auto writer_options = options;
  absl::Notification release;
  writer_options.before_send = [&](const std::string& address) {
    if (only_first.load() && address != first_address) release.WaitForNotification();
  };
  auto opener = NewQuorumOpener(writer_options);
  auto b = opener->Open(Writer("ch", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  AppendMany(b->get(), 0, 10);
  // Entry 10 reaches only the first replica: never acknowledged, but it may have been.
  only_first = true;
  std::promise<absl::Status> done;
  ASSERT_TRUE((*b)->Append(Payload(10), [&](absl::Status s) { done.set_value(s); }).ok());
  auto* server = env.server(env.IndexOf(first_address));
  ASSERT_NE(server, nullptr);
  // Wait (bounded) until the first replica has made entry 10 durable.
  kf::testing::WaitUntil([&] { return server->store()->DurableEnd("ch", 0).value_or(0) >= 11; },
                         absl::Seconds(5));
  ASSERT_EQ(server->store()->DurableEnd("ch", 0), 11u);
  auto opener2 = NewQuorumOpener(options);
  auto b2 = opener2->Open(Writer("ch", 2));
  ASSERT_TRUE(b2.ok()) << b2.status();
  release.Notify();
  EXPECT_FALSE(done.get_future().get().ok());  // the old writer is fenced
  int holders = 0;
  for (int i = 0; i < 3; ++i) {
    if (env.server(i)->store()->DurableEnd("ch", 0).value_or(0) >= 11) ++holders;
  }
  EXPECT_GE(holders, 2);
  auto all = ReadN(b2->get(), {}, 11);
  ASSERT_TRUE(all.ok()) << all.status();
  ExpectPayloads(*all, 0, 11);
  (void)(*b)->Close();
  ASSERT_TRUE((*b2)->Close().ok());
}

TEST(QuorumBackendTest, OneLogStoreDownWritesGoOn) {
  QuorumEnv env(3);
  auto opener = NewQuorumOpener(env.Options());
  auto b = opener->Open(Writer("ch", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  AppendMany(b->get(), 0, 10);
  env.StopLogStore(1);
  AppendMany(b->get(), 10, 20);
  auto all = ReadN(b->get(), {}, 30);
  ASSERT_TRUE(all.ok()) << all.status();
  ExpectPayloads(*all, 0, 30);
  // Back again: it catches up on the entries it missed.
  ASSERT_TRUE(env.StartLogStore(1));
  AppendMany(b->get(), 30, 1);
  kf::testing::WaitUntil(
      [&] { return env.server(1)->store()->DurableEnd("ch", 0).value_or(0) >= 31; },
      absl::Seconds(5));
  EXPECT_EQ(env.server(1)->store()->DurableEnd("ch", 0), 31u);
  ASSERT_TRUE((*b)->Close().ok());
}

TEST(QuorumBackendTest, TwoLogStoresDownFailsWritesUntilRestart) {
  QuorumEnv env(3);
  auto options = env.Options();
  options.ack_timeout = absl::Seconds(1);
  auto opener = NewQuorumOpener(options);
  auto b = opener->Open(Writer("ch", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  AppendMany(b->get(), 0, 10);
  env.StopLogStore(1);
  env.StopLogStore(2);
  auto failed = AppendSync(b->get(), Payload(10));
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(absl::IsUnavailable(failed.status())) << failed.status();
  EXPECT_NE(failed.status().message().find("not durable on 2 of 3"), std::string::npos)
      << failed.status();
  EXPECT_TRUE(absl::IsFailedPrecondition((*b)->Append("x", nullptr).status()));
  // A new writer cannot recover without a quorum either.
  EXPECT_TRUE(absl::IsUnavailable(opener->Open(Writer("ch", 2)).status()));
  ASSERT_TRUE(env.StartLogStore(1));
  ASSERT_TRUE(env.StartLogStore(2));
  // As a streaming node does: retry the open while the channels reconnect (bounded).
  auto b2 = opener->Open(Writer("ch", 3));
  for (int i = 0; i < 50 && absl::IsUnavailable(b2.status()); ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    b2 = opener->Open(Writer("ch", 3 + i + 1));
  }
  ASSERT_TRUE(b2.ok()) << b2.status();
  AppendMany(b2->get(), 11, 5);
  auto all = ReadAll(b2->get());
  ASSERT_TRUE(all.ok()) << all.status();
  // Entry 10 failed ambiguously: it may be there or not; everything acknowledged is.
  std::vector<std::string> payloads;
  for (const auto& e : *all) payloads.push_back(e.data);
  std::vector<std::string> expected;
  for (int i = 0; i < 16; ++i) {
    if (i == 10 && payloads.size() == 15) continue;
    expected.push_back(Payload(i));
  }
  EXPECT_EQ(payloads, expected);
  (void)(*b)->Close();
  ASSERT_TRUE((*b2)->Close().ok());
}

TEST(QuorumBackendTest, DeadLogStoreIsReplacedInTheNextSegment) {
  QuorumEnv env(4);
  auto options = env.Options();
  options.segment_bytes = 100;
  auto opener = NewQuorumOpener(options);
  auto b = opener->Open(Writer("ch", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  AppendMany(b->get(), 0, 5);
  QuorumMeta meta(env.meta(), options.meta_prefix, "ch");
  auto segments = meta.List(absl::InfiniteFuture());
  ASSERT_TRUE(segments.ok());
  const std::string victim = segments->rbegin()->second.meta.ensemble(0);
  env.StopLogStore(env.IndexOf(victim));
  const uint64_t killed_in = (*b)->NextId().segment();
  for (int i = 5; i < 60; i += 5) AppendMany(b->get(), i, 5);
  segments = meta.List(absl::InfiniteFuture());
  ASSERT_TRUE(segments.ok());
  int later = 0;
  for (const auto& [id, rec] : *segments) {
    if (id <= killed_in + 1) continue;  // the next roll may still pick it before it failed
    ++later;
    for (const auto& a : rec.meta.ensemble()) EXPECT_NE(a, victim) << "segment " << id;
  }
  EXPECT_GT(later, 0);
  auto all = ReadN(b->get(), {}, 60);
  ASSERT_TRUE(all.ok()) << all.status();
  ExpectPayloads(*all, 0, 60);
  ASSERT_TRUE((*b)->Close().ok());
}

TEST(QuorumBackendTest, SealedSegmentsAreUploadedAndReadFromObjects) {
  QuorumEnv env(3);
  auto options = env.Options();
  options.segment_bytes = 100;
  auto opener = NewQuorumOpener(options);
  auto b = opener->Open(Writer("ch", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  for (int i = 0; i < 30; i += 5) AppendMany(b->get(), i, 5);
  ASSERT_TRUE((*b)->Close().ok());  // the senders sent Seal to every replica
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(env.server(i)->UploadPending().ok());
  auto object = env.objects()->Get(format::SegmentObjectKey("wal", "ch", 0),
                                   object::ByteRange::All(), absl::InfiniteFuture());
  ASSERT_TRUE(object.ok()) << object.status();
  // Every logstore gone: the sealed segments are read from object storage.
  for (int i = 0; i < 3; ++i) env.StopLogStore(i);
  auto reader_opener = NewQuorumOpener(options);
  OpenOptions ro = Writer("ch", 0);
  ro.read_only = true;
  auto r = reader_opener->Open(ro);
  ASSERT_TRUE(r.ok()) << r.status();
  auto scanner = (*r)->Read({});
  ASSERT_TRUE(scanner.ok());
  std::vector<Entry> read;
  for (;;) {
    auto e = (*scanner)->Next(absl::Now() + absl::Seconds(5));
    if (!e.ok()) break;  // the open segment's replicas are gone
    read.push_back(*std::move(e));
  }
  // Exactly the sealed segments (the open one's replicas are gone).
  QuorumMeta meta(env.meta(), options.meta_prefix, "ch");
  auto segments = meta.List(absl::InfiniteFuture());
  ASSERT_TRUE(segments.ok());
  uint64_t sealed = 0;
  for (const auto& [id, rec] : *segments) sealed += rec.meta.sealed() ? rec.meta.end() : 0;
  ASSERT_GE(sealed, 20u);
  ASSERT_EQ(read.size(), sealed);
  for (size_t i = 0; i < read.size(); ++i) EXPECT_EQ(read[i].data, Payload(static_cast<int>(i)));
}

TEST(QuorumBackendTest, TruncateDropsWholeSealedSegments) {
  QuorumEnv env(3);
  auto options = env.Options();
  options.segment_bytes = 100;
  auto opener = NewQuorumOpener(options);
  auto b = opener->Open(Writer("ch", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<MessageId> ids;
  for (int i = 0; i < 40; i += 5) {
    auto more = AppendMany(b->get(), i, 5);
    ids.insert(ids.end(), more.begin(), more.end());
  }
  ASSERT_GT(ids.back().segment(), 2u);
  const MessageId cut = ids[20];
  ASSERT_TRUE((*b)->Truncate(cut).ok());
  auto scanner = (*b)->Read({});
  ASSERT_TRUE(scanner.ok());
  auto first = (*scanner)->Next(absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_LE(first->id, MessageId(WalKind::kQuorum, cut.segment() + 1, 0));
  EXPECT_GT(first->id.segment(), 0u);
  // Below the first segment left: OUT_OF_RANGE naming it, never a silent skip.
  auto below = (*b)->Read({.start = ReadOptions::Start::kFrom, .id = ids[0]});
  ASSERT_TRUE(below.ok()) << below.status();
  auto next = (*below)->Next(absl::Now() + absl::Seconds(5));
  EXPECT_TRUE(absl::IsOutOfRange(next.status())) << next.status();
  EXPECT_THAT(std::string(next.status().message()),
              ::testing::HasSubstr("the earliest readable id is " + first->id.ToText()));
  // After the last entry of the newest segment truncated: nothing was missed.
  const auto last_gone = std::find(ids.begin(), ids.end(), first->id) - 1;
  auto after = (*b)->Read({.start = ReadOptions::Start::kAfter, .id = *last_gone});
  ASSERT_TRUE(after.ok()) << after.status();
  auto resumed = (*after)->Next(absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(resumed->id, first->id);
  auto tail = (*b)->TailStart(1);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->segment(), ids.back().segment());
  ASSERT_TRUE((*b)->Close().ok());
}

}  // namespace
}  // namespace kf::wal::quorum
