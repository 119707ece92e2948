#include "wal/backends/objectstore/object_backend.h"

#include <future>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "common/errors.h"
#include "common/metrics/histogram.h"
#include "common/testing/wait_until.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "wal/backends/objectstore/layout.h"
#include "wal/backends/objectstore/log_meta.h"
#include "wal/backends/objectstore/test_util.h"

namespace kf::wal::objectstore {
namespace {

using testing::AppendSync;
using testing::ReadAll;
using testing::Stores;
using testing::Writer;

constexpr char kPch[] = "kf-dml_0";

// Appends `n` entries without waiting; records the outcomes in callback order by append index.
struct Batch {
  absl::Mutex mu;
  std::vector<MessageId> ids;
  std::vector<std::pair<size_t, absl::Status>> done ABSL_GUARDED_BY(mu);

  void Append(WalBackend* b, int n, const std::string& tag) {
    for (int i = 0; i < n; ++i) {
      const size_t index = ids.size();
      auto id = b->Append(absl::StrCat(tag, i), [this, index](absl::Status s) {
        absl::MutexLock l(&mu);
        done.emplace_back(index, s);
      });
      ASSERT_TRUE(id.ok()) << id.status();
      ids.push_back(*id);
    }
  }
  void WaitAll() {
    absl::MutexLock l(&mu);
    auto all = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return done.size() == ids.size(); };
    mu.Await(absl::Condition(&all));
  }
};

TEST(ObjectBackendTest, AppendsAreReadBackInIdOrder) {
  Stores stores;
  auto opener = NewObjectOpener(stores.Options());
  auto b = opener->Open(Writer(kPch, 1));
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<MessageId> ids;
  for (int i = 0; i < 20; ++i) {
    auto id = AppendSync(b->get(), absl::StrCat("e", i));
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(id->kind(), WalKind::kObjectStore);
    if (!ids.empty()) {
      EXPECT_LT(ids.back(), *id);
    }
    ids.push_back(*id);
  }
  auto all = ReadAll(b->get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ((*all)[i].id, ids[i]);
    EXPECT_EQ((*all)[i].data, absl::StrCat("e", i));
  }
  EXPECT_LT(ids.back(), (*b)->NextId());
  EXPECT_TRUE((*b)->Close().ok());
}

TEST(ObjectBackendTest, ParallelUploadsAreAcknowledgedInIdOrder) {
  Stores stores;
  auto o = stores.Options();
  o.max_block_bytes = 100;  // a few entries per block: many uploads at once
  o.max_parallel_uploads = 4;
  auto b = NewObjectOpener(o)->Open(Writer(kPch, 1));
  ASSERT_TRUE(b.ok()) << b.status();
  stores.fault()->SetPutDelay(absl::Milliseconds(20));
  Batch batch;
  batch.Append(b->get(), 200, "p");
  batch.WaitAll();
  absl::MutexLock l(&batch.mu);
  ASSERT_EQ(batch.done.size(), 200u);
  for (size_t i = 0; i < batch.done.size(); ++i) {
    EXPECT_TRUE(batch.done[i].second.ok()) << batch.done[i].second;
    EXPECT_EQ(batch.done[i].first, i) << "callback " << i << " out of id order";
  }
  EXPECT_GT(stores.fault()->calls(object::FaultObjectStore::Op::kPut), 1u);
}

// Each block's upload is one flush (OpenOptions::flush_duration); the fence block written at
// open is not.
TEST(ObjectBackendTest, EachBlockUploadIsObservedAsAFlush) {
  Stores stores;
  metrics::Histogram flushes(&metrics::LatencyBucketsSeconds());
  OpenOptions open = Writer(kPch, 1);
  open.flush_duration = &flushes;
  auto b = NewObjectOpener(stores.Options())->Open(open);
  ASSERT_TRUE(b.ok()) << b.status();
  const uint64_t puts = stores.fault()->calls(object::FaultObjectStore::Op::kPut);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(AppendSync(b->get(), absl::StrCat("e", i)).ok());
  EXPECT_EQ(flushes.Read().count, stores.fault()->calls(object::FaultObjectStore::Op::kPut) - puts);
  EXPECT_GE(flushes.Read().count, 5u);  // each append waited for its block
  EXPECT_TRUE((*b)->Close().ok());
}

TEST(ObjectBackendTest, ReopenRecoversEveryEntryAndContinuesInANewSegment) {
  Stores stores;
  auto opener = NewObjectOpener(stores.Options());
  std::vector<MessageId> ids;
  {
    auto b = opener->Open(Writer(kPch, 1));
    ASSERT_TRUE(b.ok()) << b.status();
    for (int i = 0; i < 5; ++i) ids.push_back(*AppendSync(b->get(), absl::StrCat("a", i)));
    // No Close: the next owner must fence and seal the segment by itself.
    auto b2 = opener->Open(Writer(kPch, 2));
    ASSERT_TRUE(b2.ok()) << b2.status();
    EXPECT_GT((*b2)->NextId().segment(), ids.back().segment());
    auto next = AppendSync(b2->get(), "b0");
    ASSERT_TRUE(next.ok()) << next.status();
    ids.push_back(*next);
    auto late = (*b)->Append("late", [](absl::Status) {});
    auto all = ReadAll(b2->get());
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->size(), 6u);
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ((*all)[i].id, ids[i]);
    EXPECT_EQ(all->back().data, "b0");
    (void)late;
  }
}

TEST(ObjectBackendTest, OpeningBelowTheHighestTermIsFenced) {
  Stores stores;
  auto opener = NewObjectOpener(stores.Options());
  ASSERT_TRUE(opener->Open(Writer(kPch, 5)).ok());
  auto old = opener->Open(Writer(kPch, 4));
  EXPECT_TRUE(IsFenced(old.status())) << old.status();
}

// The acceptance race: the old owner is paused with appends in flight, a new owner opens, the
// old one resumes. It never gets an acknowledgement after the new one opened, and everything it
// got acknowledged before is in the new owner's log.
TEST(ObjectBackendTest, FencedWriterNeverAcknowledgesAfterTheNewOwnerOpened) {
  Stores stores;
  auto old_opener = NewObjectOpener(stores.Options());
  auto new_opener = NewObjectOpener(stores.Options(stores.base()));
  auto old = old_opener->Open(Writer(kPch, 1));
  ASSERT_TRUE(old.ok()) << old.status();
  Batch before;
  before.Append(old->get(), 10, "before");
  before.WaitAll();
  stores.fault()->SetPutDelay(absl::Milliseconds(300));  // "paused" mid-upload
  Batch paused;
  paused.Append(old->get(), 10, "paused");

  auto fresh = new_opener->Open(Writer(kPch, 2));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const absl::Time opened = absl::Now();
  stores.fault()->SetPutDelay(absl::ZeroDuration());
  paused.WaitAll();
  {
    absl::MutexLock l(&paused.mu);
    for (const auto& [i, s] : paused.done) EXPECT_FALSE(s.ok()) << i << " acked after the fence";
    EXPECT_TRUE(IsFenced(paused.done.front().second)) << paused.done.front().second;
  }
  EXPECT_TRUE(IsFenced((*old)->Append("after", [](absl::Status) {}).status()));
  EXPECT_GT(absl::Now(), opened);

  auto all = ReadAll(fresh->get());
  ASSERT_TRUE(all.ok()) << all.status();
  std::map<std::string, int> seen;
  for (const auto& e : *all) ++seen[e.data];
  absl::MutexLock l(&before.mu);
  for (const auto& [i, s] : before.done) ASSERT_TRUE(s.ok()) << s;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(seen[absl::StrCat("before", i)], 1) << i;
  for (int i = 0; i < 10; ++i) EXPECT_EQ(seen[absl::StrCat("paused", i)], 0) << i;
}

// The same race when the old owner's blocks are already stored but their acknowledgement is
// late: the new owner's log holds them (exactly once), and the old owner must still not
// acknowledge them — it learns of the new open from the generation check.
TEST(ObjectBackendTest, StoredButUnacknowledgedBlocksOfAFencedWriterFailAndAreKeptOnce) {
  Stores stores;
  auto old = NewObjectOpener(stores.Options())->Open(Writer(kPch, 1));
  ASSERT_TRUE(old.ok()) << old.status();
  stores.fault()->SetPutAnswerDelay(absl::Milliseconds(300));
  Batch paused;
  paused.Append(old->get(), 5, "paused");
  // Wait until the blocks are stored (the answers are still held back).
  Layout layout("wal", "", kPch);
  const std::string key =
      layout.BlockKey(paused.ids.back().segment(), BlockOf(paused.ids.back().entry()));
  ASSERT_TRUE(
      kf::testing::WaitUntil([&] { return stores.base()->Head(key, absl::InfiniteFuture()).ok(); },
                             absl::Seconds(10), absl::Milliseconds(1)));
  auto fresh = NewObjectOpener(stores.Options(stores.base()))->Open(Writer(kPch, 2));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  paused.WaitAll();
  {
    absl::MutexLock l(&paused.mu);
    for (const auto& [i, s] : paused.done) EXPECT_TRUE(IsFenced(s)) << i << ": " << s;
  }
  auto all = ReadAll(fresh->get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ((*all)[i].data, absl::StrCat("paused", i));
}

TEST(ObjectBackendTest, TransientStoreErrorsAreRetriedAndStoredOnce) {
  Stores stores;
  auto b = NewObjectOpener(stores.Options())->Open(Writer(kPch, 1));
  ASSERT_TRUE(b.ok()) << b.status();
  stores.fault()->FailNext(object::FaultObjectStore::Op::kPut, absl::UnavailableError("boom"), 3);
  auto a = AppendSync(b->get(), "x");
  EXPECT_TRUE(a.ok()) << a.status();
  stores.fault()->LoseNextPutAnswer();  // stored, but the writer hears UNAVAILABLE
  auto c = AppendSync(b->get(), "y");
  EXPECT_TRUE(c.ok()) << c.status();
  stores.fault()->TimeoutNext(object::FaultObjectStore::Op::kPut);
  auto d = AppendSync(b->get(), "z");
  EXPECT_TRUE(d.ok()) << d.status();
  auto all = ReadAll(b->get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[1].data, "y");
}

TEST(ObjectBackendTest, AStoreDownLongerThanTheUploadTimeoutFailsTheLogClearly) {
  Stores stores;
  auto o = stores.Options();
  o.upload_timeout = absl::Milliseconds(300);
  auto opener = NewObjectOpener(o);
  auto b = opener->Open(Writer(kPch, 1));
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_TRUE(AppendSync(b->get(), "kept").ok());
  stores.fault()->FailNext(object::FaultObjectStore::Op::kPut, absl::UnavailableError("down"),
                           1000000);
  auto failed = AppendSync(b->get(), "lost");
  EXPECT_TRUE(absl::IsUnavailable(failed.status())) << failed.status();
  EXPECT_NE(failed.status().message().find("not stored"), absl::string_view::npos);
  auto refused = (*b)->Append("after", [](absl::Status) {});
  EXPECT_TRUE(absl::IsFailedPrecondition(refused.status())) << refused.status();
  stores.fault()->FailNext(object::FaultObjectStore::Op::kPut, absl::OkStatus(), 0);
  auto fresh = NewObjectOpener(stores.Options(stores.base()))->Open(Writer(kPch, 2));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  auto all = ReadAll(fresh->get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].data, "kept");
}

TEST(ObjectBackendTest, SegmentsRollBySizeAndRecoveryReadsOnlyTheOpenSegment) {
  Stores stores;
  auto o = stores.Options();
  o.segment_bytes = 300;  // a few blocks per segment
  auto opener = NewObjectOpener(o);
  auto b = opener->Open(Writer(kPch, 1));
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<MessageId> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(*AppendSync(b->get(), std::string(50, 'a' + i % 26)));
  EXPECT_GT(ids.back().segment(), ids.front().segment() + 5);
  auto meta = LoadMeta(stores.meta(), "kf/wal/objectstore/kf-dml_0", absl::InfiniteFuture());
  ASSERT_TRUE(meta.ok());
  int sealed = 0;
  for (const auto& s : meta->meta.segments()) sealed += s.sealed() ? 1 : 0;
  EXPECT_EQ(sealed, meta->meta.segments_size() - 1);

  const uint64_t gets = stores.fault()->calls(object::FaultObjectStore::Op::kGet);
  const uint64_t lists = stores.fault()->calls(object::FaultObjectStore::Op::kList);
  auto b2 = opener->Open(Writer(kPch, 2));
  ASSERT_TRUE(b2.ok()) << b2.status();
  // One open segment: one list page and one block read, however long the log is. The new
  // backend's garbage collector lists once more as it starts, on its own thread.
  auto new_lists = [&] {
    return stores.fault()->calls(object::FaultObjectStore::Op::kList) - lists;
  };
  ASSERT_TRUE(kf::testing::WaitUntil([&] { return new_lists() >= 2; }, absl::Seconds(10)));
  EXPECT_LE(stores.fault()->calls(object::FaultObjectStore::Op::kGet) - gets, 1u);
  EXPECT_EQ(new_lists(), 2u);
  auto all = ReadAll(b2->get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 40u);
  for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ((*all)[i].id, ids[i]);
  // Reading from the middle goes straight to the block of that id.
  auto scanner = (*b2)->Read({.start = ReadOptions::Start::kAfter, .id = ids[30]});
  ASSERT_TRUE(scanner.ok());
  auto e = (*scanner)->Next(absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->id, ids[31]);
}

TEST(ObjectBackendTest, SealedSegmentsOfSmallBlocksAreCompactedAndStayReadable) {
  Stores stores;
  auto o = stores.Options();
  o.segment_bytes = 600;  // ~8 blocks of one entry per segment
  auto opener = NewObjectOpener(o);
  auto b = opener->Open(Writer(kPch, 1));
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<MessageId> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(*AppendSync(b->get(), absl::StrCat("c", i)));
  const uint64_t first = ids.front().segment();
  ASSERT_GT(ids.back().segment(), first + 1);
  // The compactor runs in the background: wait until the metadata lists the first segment's run.
  const std::string meta_key = "kf/wal/objectstore/kf-dml_0";
  for (absl::Time give_up = absl::Now() + absl::Seconds(20);;) {
    auto meta = LoadMeta(stores.meta(), meta_key, absl::InfiniteFuture());
    ASSERT_TRUE(meta.ok());
    if (meta->meta.segments(0).merged_size() > 0) break;
    ASSERT_LT(absl::Now(), give_up) << "segment " << first << " not compacted";
    absl::SleepFor(absl::Milliseconds(5));  // polling the metadata store
  }
  Layout layout("wal", "", kPch);
  // The small blocks go after the metadata change: wait for the last of them to be deleted.
  for (absl::Time give_up = absl::Now() + absl::Seconds(20);;) {
    auto listed = stores.base()->List(layout.SegmentPrefix(first), "", 100, absl::InfiniteFuture());
    ASSERT_TRUE(listed.ok());
    bool only_merged = true;
    for (const auto& obj : listed->objects) {
      only_merged = only_merged && obj.key.substr(layout.SegmentPrefix(first).size(), 1) == "m";
    }
    if (only_merged && !listed->objects.empty()) break;
    ASSERT_LT(absl::Now(), give_up);
    absl::SleepFor(absl::Milliseconds(5));
  }
  auto check = [&](WalBackend* backend) {
    auto all = ReadAll(backend);
    ASSERT_TRUE(all.ok()) << all.status();
    ASSERT_EQ(all->size(), 30u);
    for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ((*all)[i].id, ids[i]);
    // From the middle of a compacted run.
    auto scanner = backend->Read({.start = ReadOptions::Start::kFrom, .id = ids[2]});
    ASSERT_TRUE(scanner.ok());
    auto e = (*scanner)->Next(absl::Now() + absl::Seconds(5));
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->data, "c2");
  };
  check(b->get());
  ASSERT_TRUE((*b)->Close().ok());
  auto reopened = opener->Open(Writer(kPch, 2));
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  check(reopened->get());
}

TEST(ObjectBackendTest, SegmentsRollByAge) {
  Stores stores;
  auto o = stores.Options();
  o.segment_age = absl::ZeroDuration();  // every block closes its segment
  auto b = NewObjectOpener(o)->Open(Writer(kPch, 1));
  ASSERT_TRUE(b.ok()) << b.status();
  auto first = AppendSync(b->get(), "one");
  auto second = AppendSync(b->get(), "two");
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_LT(first->segment(), second->segment());
  auto all = ReadAll(b->get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].data, "two");
}

TEST(ObjectBackendTest, TruncateDeletesWholeSegmentsBelowThePoint) {
  Stores stores;
  auto o = stores.Options();
  o.segment_bytes = 300;
  auto b = NewObjectOpener(o)->Open(Writer(kPch, 1));
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<MessageId> ids;
  for (int i = 0; i < 30; ++i) ids.push_back(*AppendSync(b->get(), std::string(50, 'x')));
  const MessageId cut = ids[15];
  ASSERT_TRUE((*b)->Truncate(cut).ok());
  auto all = ReadAll(b->get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_FALSE(all->empty());
  EXPECT_GT(all->front().id, ids[0]);
  EXPECT_LE(all->front().id.segment(), cut.segment() + 1);
  EXPECT_EQ(all->back().id, ids.back());
  Layout layout("wal", "", kPch);
  auto left =
      stores.base()->List(layout.SegmentPrefix(ids[0].segment()), "", 10, absl::InfiniteFuture());
  ASSERT_TRUE(left.ok());
  EXPECT_TRUE(left->objects.empty());
  auto scanner = (*b)->Read({.start = ReadOptions::Start::kFrom, .id = ids[0]});
  ASSERT_TRUE(scanner.ok());
  auto next = (*scanner)->Next(absl::Now() + absl::Seconds(1));
  EXPECT_TRUE(absl::IsOutOfRange(next.status())) << next.status();
  EXPECT_THAT(std::string(next.status().message()),
              ::testing::HasSubstr("the earliest readable id is " + all->front().id.ToText()));
  // Reading from just past the last entry of the newest truncated segment loses nothing: it
  // goes on at the next segment, here and in a backend opened afresh (from the metadata).
  MessageId last_gone;
  for (const MessageId& id : ids) {
    if (id < all->front().id) last_gone = id;
  }
  ASSERT_TRUE(last_gone.valid());
  const MessageId past = IdOf(last_gone.segment(), last_gone.entry() + 1);
  const auto reads_on_from_past = [&](WalBackend& backend) {
    auto from_past = backend.Read({.start = ReadOptions::Start::kFrom, .id = past});
    ASSERT_TRUE(from_past.ok()) << from_past.status();
    auto first = (*from_past)->Next(absl::Now() + absl::Seconds(5));
    ASSERT_TRUE(first.ok()) << first.status();
    EXPECT_EQ(first->id, all->front().id);
  };
  reads_on_from_past(**b);
  ASSERT_TRUE((*b)->Close().ok());
  auto reopened = NewObjectOpener(o)->Open(Writer(kPch, 2));
  ASSERT_TRUE(reopened.ok()) << reopened.status();
  reads_on_from_past(**reopened);
  ASSERT_TRUE((*reopened)->Close().ok());
  // Metadata of a version that did not record where the truncated segment ended: the same
  // read is OUT_OF_RANGE (never a silent skip of entries it cannot tell are gone).
  const std::string key = Layout("wal", o.meta_prefix, kPch).meta_key();
  auto stored = stores.meta()->Get(key, absl::InfiniteFuture());
  ASSERT_TRUE(stored.ok()) << stored.status();
  kingfisher::v1::ObjectLogMeta meta;
  ASSERT_TRUE(meta.ParseFromString(stored->kv.value));
  ASSERT_TRUE(meta.has_truncated_end());
  meta.clear_truncated_end();
  ASSERT_TRUE(stores.meta()->Put(key, meta.SerializeAsString(), absl::InfiniteFuture()).ok());
  auto older = NewObjectOpener(o)->Open(Writer(kPch, 3));
  ASSERT_TRUE(older.ok()) << older.status();
  auto from_past = (*older)->Read({.start = ReadOptions::Start::kFrom, .id = past});
  ASSERT_TRUE(from_past.ok());
  EXPECT_TRUE(absl::IsOutOfRange((*from_past)->Next(absl::Now() + absl::Seconds(1)).status()));
  reopened = std::move(older);
  // One entry earlier is gone: OUT_OF_RANGE.
  auto from_gone = (*reopened)->Read({.start = ReadOptions::Start::kFrom, .id = last_gone});
  ASSERT_TRUE(from_gone.ok());
  EXPECT_TRUE(absl::IsOutOfRange((*from_gone)->Next(absl::Now() + absl::Seconds(1)).status()));
}

TEST(ObjectBackendTest, ObjectsATruncationLeftBehindAreDeletedByTheNextOwner) {
  Stores stores;
  auto o = stores.Options();
  o.segment_bytes = 300;
  auto b = NewObjectOpener(o)->Open(Writer(kPch, 1));
  ASSERT_TRUE(b.ok()) << b.status();
  std::vector<MessageId> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(*AppendSync(b->get(), std::string(50, 'g')));
  // The metadata drops the segments, then deleting their objects fails (as a crash would).
  stores.fault()->FailNext(object::FaultObjectStore::Op::kDelete,
                           absl::PermissionDeniedError("injected"), 1000);
  EXPECT_FALSE((*b)->Truncate(ids[10]).ok());
  stores.fault()->FailNext(object::FaultObjectStore::Op::kDelete, absl::OkStatus(), 0);
  ASSERT_TRUE((*b)->Close().ok());
  Layout layout("wal", "", kPch);
  auto leftover = [&] {
    auto l =
        stores.base()->List(layout.SegmentPrefix(ids[0].segment()), "", 10, absl::InfiniteFuture());
    EXPECT_TRUE(l.ok());
    return l.ok() && !l->objects.empty();
  };
  ASSERT_TRUE(leftover());
  auto next = NewObjectOpener(stores.Options(stores.base()))->Open(Writer(kPch, 2));
  ASSERT_TRUE(next.ok()) << next.status();
  for (absl::Time give_up = absl::Now() + absl::Seconds(20); leftover();) {
    ASSERT_LT(absl::Now(), give_up) << "truncated objects not collected";
    absl::SleepFor(absl::Milliseconds(5));  // polling the store for the background deletes
  }
  auto all = ReadAll(next->get());
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ(all->back().id, ids.back());
}

TEST(ObjectBackendTest, ReadOnlyBackendTailsAWriterElsewhere) {
  Stores stores;
  auto writer = NewObjectOpener(stores.Options())->Open(Writer(kPch, 1));
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE(AppendSync(writer->get(), "first").ok());
  OpenOptions ro = Writer(kPch, 0);
  ro.read_only = true;
  auto reader = NewObjectOpener(stores.Options(stores.base()))->Open(ro);
  ASSERT_TRUE(reader.ok()) << reader.status();
  auto scanner = (*reader)->Read(ReadOptions{});
  ASSERT_TRUE(scanner.ok());
  auto e = (*scanner)->Next(absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->data, "first");
  ASSERT_TRUE(AppendSync(writer->get(), "second").ok());
  e = (*scanner)->Next(absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->data, "second");
}

TEST(ObjectBackendTest, ACorruptBlockIsDataLoss) {
  Stores stores;
  auto b = NewObjectOpener(stores.Options())->Open(Writer(kPch, 1));
  ASSERT_TRUE(b.ok());
  auto first = AppendSync(b->get(), "first");
  auto second = AppendSync(b->get(), "second");
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_NE(BlockOf(first->entry()), BlockOf(second->entry()));
  ASSERT_TRUE((*b)->Close().ok());
  Layout layout("wal", "", kPch);
  auto flip = [&](const MessageId& id) {
    const std::string key = layout.BlockKey(id.segment(), BlockOf(id.entry()));
    auto bytes = stores.base()->Get(key, object::ByteRange::All(), absl::InfiniteFuture());
    ASSERT_TRUE(bytes.ok());
    bytes->back() ^= 1;
    ASSERT_TRUE(stores.base()->Put(key, *bytes, {}, absl::InfiniteFuture()).ok());
  };
  flip(*first);
  auto fresh = NewObjectOpener(stores.Options())->Open(Writer(kPch, 2));
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  auto all = ReadAll(fresh->get());
  EXPECT_TRUE(absl::IsDataLoss(all.status())) << all.status();
  // Recovery reads the last block of the open segment: damage there stops the open.
  flip(*second);
  ASSERT_TRUE((*fresh)->Close().ok());
  auto third = NewObjectOpener(stores.Options())->Open(Writer(kPch, 3));
  EXPECT_TRUE(third.ok()) << third.status();  // that segment was sealed by term 2
}

}  // namespace
}  // namespace kf::wal::objectstore
