#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "common/errors.h"
#include "common/testing/temp_dir.h"
#include "gtest/gtest.h"
#include "storage/fs/fault_injection_file_system.h"
#include "storage/fs/posix_file_system.h"
#include "wal/backends/local/local_opener.h"
#include "wal/backends/local/test_util.h"

namespace kf::wal::local {
namespace {

using testing::AppendSync;
using testing::ReadAll;
using testing::ReadN;
using testing::Writer;

std::string Payload(uint64_t i) {
  return "entry-" + std::to_string(i) + std::string(i % 97, static_cast<char>('a' + i % 26));
}

class LocalBackendTest : public ::testing::Test {
 protected:
  std::unique_ptr<WalOpener> Opener(uint64_t segment_bytes = 4096) {
    LocalOpenerOptions o;
    o.root = root_;
    o.fs = &fs_;
    o.segment_bytes = segment_bytes;
    return NewLocalOpener(o);
  }
  std::unique_ptr<WalBackend> OpenOrDie(WalOpener* opener, int64_t term = 1) {
    auto b = opener->Open(Writer("kf-dml_0", term));
    EXPECT_TRUE(b.ok()) << b.status();
    return b.ok() ? std::move(*b) : nullptr;
  }

  // Entries 0..n-1 hold Payload(0..n-1).
  static void ExpectPayloads(const std::vector<Entry>& all, uint64_t n) {
    ASSERT_GE(all.size(), n);
    for (uint64_t i = 0; i < n; ++i) {
      EXPECT_EQ(all[i].id, MessageId::Local(i));
      EXPECT_EQ(all[i].data, Payload(i));
    }
  }
  size_t SegmentCount() {
    auto files = posix_.GetChildren(root_ + "/kf-dml_0");
    EXPECT_TRUE(files.ok()) << files.status();
    return files.ok() ? files->size() : 0;
  }

  // Appends `data` with a callback that parks the writer thread until `release` is notified, and
  // returns once it is parked: appends made meanwhile queue up behind each other.
  static void ParkWriter(WalBackend* b, std::string data, absl::Notification* release) {
    auto entered = std::make_shared<absl::Notification>();
    ASSERT_TRUE(b->Append(std::move(data), [entered, release](absl::Status) {
                   entered->Notify();
                   release->WaitForNotification();
                 }).ok());
    entered->WaitForNotification();
  }

  kf::testing::TempDir dir_{"local_wal"};
  std::string root_ = dir_.path();
  fs::PosixFileSystem posix_;
  fs::FaultInjectionFileSystem fs_{&posix_};
};

TEST_F(LocalBackendTest, RoundTripAcrossSegmentRollsAndReopen) {
  auto opener = Opener();
  auto b = OpenOrDie(opener.get());
  constexpr uint64_t kN = 300;
  for (uint64_t i = 0; i < kN; ++i) {
    auto id = AppendSync(b.get(), Payload(i));
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(*id, MessageId::Local(i));  // dense ids
  }
  EXPECT_EQ(b->NextId(), MessageId::Local(kN));
  auto all = ReadN(b.get(), ReadOptions{}, kN);
  ASSERT_TRUE(all.ok()) << all.status();
  ExpectPayloads(*all, kN);
  EXPECT_GT(SegmentCount(), 5u) << "expected several segments";
  ASSERT_TRUE(b->Close().ok());
  b.reset();

  // Same-term reopen recovers everything and continues the ids.
  b = OpenOrDie(opener.get());
  EXPECT_EQ(b->NextId(), MessageId::Local(kN));
  auto id = AppendSync(b.get(), "after-reopen");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, MessageId::Local(kN));
  auto again = ReadAll(b.get());
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(again->size(), kN + 1);
  EXPECT_EQ((*again)[kN - 1].data, Payload(kN - 1));
  EXPECT_EQ((*again)[kN].data, "after-reopen");
}

// Appends queued faster than the writer takes them form groups of several batches (each
// batch built by the appenders) that also cross segment rolls.
TEST_F(LocalBackendTest, GroupsOfManyBatchesAcrossRolls) {
  LocalOpenerOptions o;
  o.root = root_;
  o.fs = &fs_;
  o.segment_bytes = 8 << 10;
  o.max_batch_bytes = 2 << 10;
  auto opener = NewLocalOpener(o);
  auto b = OpenOrDie(opener.get());
  constexpr uint64_t kN = 500;
  for (uint64_t i = 0; i + 1 < kN; ++i) {
    auto id = b->Append(Payload(i), nullptr);
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(*id, MessageId::Local(i));
  }
  ASSERT_TRUE(AppendSync(b.get(), Payload(kN - 1)).ok());
  ASSERT_TRUE(b->Close().ok());
  b = OpenOrDie(opener.get());
  auto all = ReadAll(b.get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), kN);
  ExpectPayloads(*all, kN);
  EXPECT_GT(SegmentCount(), 3u) << "expected several segments";
}

TEST_F(LocalBackendTest, ReadPolicies) {
  auto opener = Opener();
  auto b = OpenOrDie(opener.get());
  for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(AppendSync(b.get(), Payload(i)).ok());

  ReadOptions from{ReadOptions::Start::kFrom, MessageId::Local(42)};
  auto r = ReadN(b.get(), from, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].id, MessageId::Local(42));
  EXPECT_EQ((*r)[2].data, Payload(44));

  ReadOptions after{ReadOptions::Start::kAfter, MessageId::Local(42)};
  r = ReadN(b.get(), after, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].id, MessageId::Local(43));

  // Latest: only what is appended after the scanner exists; waiting times out, then works.
  auto latest = b->Read(ReadOptions{ReadOptions::Start::kLatest, {}});
  ASSERT_TRUE(latest.ok());
  auto none = (*latest)->Next(absl::Now() + absl::Milliseconds(20));
  EXPECT_TRUE(absl::IsDeadlineExceeded(none.status())) << none.status();
  ASSERT_TRUE(AppendSync(b.get(), "new").ok());
  auto e = (*latest)->Next(absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->id, MessageId::Local(100));
  EXPECT_EQ(e->data, "new");

  // A tailing scanner is woken by the append (no polling in the writer's own process).
  auto tail = b->Read(ReadOptions{ReadOptions::Start::kFrom, MessageId::Local(101)});
  ASSERT_TRUE(tail.ok());
  std::thread appender([&] { ASSERT_TRUE(AppendSync(b.get(), "tail").ok()); });
  e = (*tail)->Next(absl::Now() + absl::Seconds(10));
  appender.join();
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->data, "tail");

  ReadOptions bad{ReadOptions::Start::kFrom, MessageId(WalKind::kQuorum, 1, 2)};
  EXPECT_TRUE(absl::IsInvalidArgument(b->Read(bad).status()));
}

TEST_F(LocalBackendTest, TruncateDeletesWholeSegmentsOnly) {
  auto opener = Opener();
  auto b = OpenOrDie(opener.get());
  for (uint64_t i = 0; i < 200; ++i) ASSERT_TRUE(AppendSync(b.get(), Payload(i)).ok());
  const size_t files_before = posix_.GetChildren(root_ + "/kf-dml_0")->size();
  ASSERT_TRUE(b->Truncate(MessageId::Local(120)).ok());
  const size_t files_after = posix_.GetChildren(root_ + "/kf-dml_0")->size();
  EXPECT_LT(files_after, files_before);
  auto scanner = b->Read(ReadOptions{});
  ASSERT_TRUE(scanner.ok());
  auto first = (*scanner)->Next(absl::Now() + absl::Seconds(5));
  ASSERT_TRUE(first.ok());
  EXPECT_LE(first->id.entry(), 121u) << "entries above the truncation point must stay";
  EXPECT_GT(first->id.entry(), 0u);
  EXPECT_EQ(first->data, Payload(first->id.entry()));
  const absl::Status truncated =
      b->Read(ReadOptions{ReadOptions::Start::kFrom, MessageId::Local(0)}).status();
  EXPECT_TRUE(absl::IsOutOfRange(truncated)) << truncated;
  EXPECT_NE(std::string(truncated.message())
                .find("the earliest readable id is local:" + std::to_string(first->id.entry())),
            std::string::npos)
      << truncated;
  // Truncating past the end keeps the active segment.
  ASSERT_TRUE(b->Truncate(MessageId::Local(10'000)).ok());
  ASSERT_TRUE(AppendSync(b.get(), "still-works").ok());
  auto r = ReadN(b.get(), ReadOptions{ReadOptions::Start::kFrom, MessageId::Local(200)}, 1);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].data, "still-works");
  // And it survives a reopen.
  b.reset();
  b = OpenOrDie(opener.get());
  EXPECT_EQ(b->NextId(), MessageId::Local(201));
}

TEST_F(LocalBackendTest, CloseDrainsAndRejects) {
  auto opener = Opener();
  auto b = OpenOrDie(opener.get());
  std::atomic<int> ok{0};
  for (int i = 0; i < 50; ++i) {
    ASSERT_TRUE(b->Append(Payload(i), [&](absl::Status s) { ok += s.ok(); }).ok());
  }
  auto scanner = b->Read(ReadOptions{ReadOptions::Start::kLatest, {}});
  ASSERT_TRUE(scanner.ok());
  ASSERT_TRUE(b->Close().ok());
  EXPECT_EQ(ok.load(), 50) << "every queued append completes before Close returns";
  EXPECT_TRUE(absl::IsCancelled(b->Append("late", [](absl::Status) {}).status()));
  EXPECT_TRUE(b->Close().ok());  // idempotent
  EXPECT_TRUE(absl::IsCancelled((*scanner)->Next(absl::Now() + absl::Seconds(1)).status()));
}

TEST_F(LocalBackendTest, LimitsAndNames) {
  LocalOpenerOptions o;
  o.root = root_;
  o.max_entry_bytes = 100;
  o.max_queue_bytes = 300;
  auto opener = NewLocalOpener(o);
  for (const char* bad : {"", "..", ".", "a/b"}) {
    EXPECT_TRUE(absl::IsInvalidArgument(opener->Open(Writer(bad, 1)).status())) << bad;
  }
  EXPECT_TRUE(absl::IsNotFound(opener->Open({"never", Term(1), true}).status()));
  auto b = opener->Open(Writer("p", 1));
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(absl::IsInvalidArgument((*b)->Append(std::string(101, 'x'), nullptr).status()));
  // Hold the writer thread inside a callback so the queue fills up.
  absl::Notification release;
  ParkWriter(b->get(), "first", &release);
  std::atomic<int> done{0};
  absl::Status last;
  int accepted = 0;
  for (int i = 0; i < 10; ++i) {
    auto id = (*b)->Append(std::string(100, 'q'), [&](absl::Status) { ++done; });
    if (!id.ok()) {
      last = id.status();
      break;
    }
    ++accepted;
  }
  EXPECT_TRUE(absl::IsResourceExhausted(last)) << last;
  EXPECT_GE(accepted, 2);
  release.Notify();
  ASSERT_TRUE((*b)->Close().ok());
  EXPECT_EQ(done.load(), accepted);
  EXPECT_EQ(opener->kind(), WalKind::kLocal);
}

// A refused entry is encoded into the queue before its size is known: its bytes must go again,
// whether it was the first of the queue or behind others.
TEST_F(LocalBackendTest, RefusedEntriesLeaveNothingInTheLog) {
  LocalOpenerOptions o;
  o.root = root_;
  o.max_entry_bytes = 100;
  auto opener = NewLocalOpener(o);
  auto b = OpenOrDie(opener.get());
  auto oversize = [](const MessageId&, std::string* out) { out->append(101, 'x'); };
  EXPECT_TRUE(absl::IsInvalidArgument(b->AppendEncoded(oversize, nullptr).status()));
  absl::Notification release;
  ParkWriter(b.get(), "first", &release);
  ASSERT_TRUE(
      b->AppendEncoded([](const MessageId&, std::string* out) { out->append("second"); }, nullptr)
          .ok());
  EXPECT_TRUE(absl::IsInvalidArgument(b->AppendEncoded(oversize, nullptr).status()));
  ASSERT_TRUE(b->Append("third", nullptr).ok());
  release.Notify();
  ASSERT_TRUE(b->Close().ok());
  b = OpenOrDie(opener.get());
  auto all = ReadAll(b.get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  const char* want[] = {"first", "second", "third"};
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ((*all)[i].id, MessageId::Local(i));
    EXPECT_EQ((*all)[i].data, want[i]);
  }
}

TEST_F(LocalBackendTest, StickyErrorAfterFailedSync) {
  auto opener = Opener();
  auto b = OpenOrDie(opener.get());
  std::vector<std::string> acked;
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(AppendSync(b.get(), Payload(i)).ok());
    acked.push_back(Payload(i));
  }
  fs_.FailNthSync(1);
  auto failed = AppendSync(b.get(), "lost");
  EXPECT_FALSE(failed.ok());
  for (int i = 0; i < 3; ++i) {
    auto s = b->Append("later", [](absl::Status) {});
    EXPECT_TRUE(absl::IsFailedPrecondition(s.status())) << s.status();
  }
  const uint64_t writes = fs_.write_count();
  EXPECT_FALSE(AppendSync(b.get(), "x").ok());
  EXPECT_EQ(fs_.write_count(), writes) << "nothing is written after a failed sync";
  // Crash: the failed group was never synced, the acked ones survive.
  ASSERT_TRUE(fs_.SimulateCrash().ok());
  b.reset();
  fs_.Restart();
  b = OpenOrDie(opener.get());
  auto all = ReadAll(b.get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), acked.size());
  for (size_t i = 0; i < acked.size(); ++i) EXPECT_EQ((*all)[i].data, acked[i]);
}

TEST_F(LocalBackendTest, FailedWriteIsStickyToo) {
  auto opener = Opener();
  auto b = OpenOrDie(opener.get());
  ASSERT_TRUE(AppendSync(b.get(), "a").ok());
  fs_.PartialNthWrite(1, 5);
  EXPECT_FALSE(AppendSync(b.get(), "torn").ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(b->Append("b", nullptr).status()));
  b.reset();
  // The partial batch is a torn tail: recovery drops it.
  b = OpenOrDie(opener.get());
  auto all = ReadAll(b.get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 1u);
  EXPECT_EQ((*all)[0].data, "a");
}

TEST_F(LocalBackendTest, GroupCommitSharesSyncs) {
  auto opener = Opener(64 << 20);
  auto b = OpenOrDie(opener.get());
  // Park the sync thread in a callback so the 256 appends queue up behind it.
  absl::Notification release;
  ParkWriter(b.get(), "gate", &release);
  const uint64_t syncs_before = fs_.sync_count();
  constexpr int kAppends = 256;
  absl::Mutex mu;
  int done = 0, failed = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kAppends / 8; ++i) {
        auto id = b->Append(Payload(t * 1000 + i), [&](absl::Status s) {
          absl::MutexLock l(&mu);
          ++done;
          failed += !s.ok();
        });
        ASSERT_TRUE(id.ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  release.Notify();
  {
    absl::MutexLock l(&mu);
    mu.Await(absl::Condition(
        +[](int* d) { return *d == kAppends; }, &done));
  }
  EXPECT_EQ(failed, 0);
  const uint64_t syncs = fs_.sync_count() - syncs_before;
  // With the sync thread parked, at most one group waits for it and one more is written;
  // everything else queues into a single third group.
  EXPECT_LE(syncs, 3u) << "256 queued appends must share fdatasyncs";
  EXPECT_LE(fs_.write_count(), 3u + 2u);
  auto all = ReadAll(b.get());
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), static_cast<size_t>(kAppends) + 1);
}

// An appender that ends its hold with EndAppendsWritingHere while the writer is idle writes,
// syncs and completes the group on its own thread, before the call returns; while the writer
// is busy, the writer thread takes the group after it, as with EndAppends.
TEST_F(LocalBackendTest, AnIdleWriterLetsTheAppenderWriteTheGroup) {
  auto opener = Opener(64 << 20);
  auto b = OpenOrDie(opener.get());
  std::thread::id ran_on;
  b->BeginAppends();
  ASSERT_TRUE(b->Append("here", [&](absl::Status s) {
                 EXPECT_TRUE(s.ok()) << s;
                 ran_on = std::this_thread::get_id();
               }).ok());
  b->EndAppendsWritingHere();
  EXPECT_EQ(ran_on, std::this_thread::get_id());

  absl::Notification release;
  ParkWriter(b.get(), "gate", &release);
  std::promise<std::thread::id> later;
  b->BeginAppends();
  ASSERT_TRUE(b->Append("later", [&](absl::Status s) {
                 EXPECT_TRUE(s.ok()) << s;
                 later.set_value(std::this_thread::get_id());
               }).ok());
  b->EndAppendsWritingHere();  // returns at once: the writer is busy
  release.Notify();
  EXPECT_NE(later.get_future().get(), std::this_thread::get_id());
  auto all = ReadAll(b.get());
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].data, "here");
  EXPECT_EQ((*all)[2].data, "later");
}

// One thread may serve the appenders of every log (the server's CompletionLoop): while another
// log's appender offered to write moments ago, the group goes to the writer thread, so that the
// two logs sync side by side instead of taking turns on that thread.
TEST_F(LocalBackendTest, AnotherActiveLogSendsTheGroupToTheWriter) {
  auto opener = Opener(64 << 20);
  auto a = OpenOrDie(opener.get());
  auto b = opener->Open(Writer("kf-dml_1", 1));
  ASSERT_TRUE(b.ok()) << b.status();
  auto append = [](WalBackend* log, const std::string& data) {
    std::promise<std::thread::id> ran_on;
    log->BeginAppends();
    EXPECT_TRUE(log->Append(data,
                            [&](absl::Status s) {
                              EXPECT_TRUE(s.ok()) << s;
                              ran_on.set_value(std::this_thread::get_id());
                            })
                    .ok());
    log->EndAppendsWritingHere();
    return ran_on.get_future().get();
  };
  // Alone: written here (the logs of earlier tests are closed).
  EXPECT_EQ(append(a.get(), "a0"), std::this_thread::get_id());
  const auto offered = std::chrono::steady_clock::now();
  const std::thread::id b_on = append(b->get(), "b0");
  const auto elapsed = std::chrono::steady_clock::now() - offered;
  // Only a stall of 5 ms between the two offers would let b write here.
  if (elapsed < std::chrono::milliseconds(5)) {
    EXPECT_NE(b_on, std::this_thread::get_id());
  }
  // Once the other log is closed, it no longer counts.
  ASSERT_TRUE((*b)->Close().ok());
  EXPECT_EQ(append(a.get(), "a1"), std::this_thread::get_id());
}

// Appenders writing groups themselves, appenders waking the writer and a Close race: every
// callback runs exactly once, every acknowledged entry is in the log once, in id order.
TEST_F(LocalBackendTest, AppendersWritingHereAndTheWriterShareTheLog) {
  auto opener = Opener(1 << 20);
  auto b = OpenOrDie(opener.get());
  constexpr int kThreads = 6, kEach = 150;
  absl::Mutex mu;
  std::vector<int> calls(kThreads * kEach, 0);
  std::vector<bool> ok(kThreads * kEach, false);
  int acked = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kEach; ++i) {
        const int k = t * kEach + i;
        b->BeginAppends();
        auto id = b->Append(Payload(k), [&, k](absl::Status s) {
          absl::MutexLock l(&mu);
          ++calls[k];
          ok[k] = s.ok();
          acked += s.ok();
        });
        if (t % 2 == 0) {
          b->EndAppendsWritingHere();
        } else {
          b->EndAppends();
        }
        if (!id.ok()) {  // closed: refused without a callback
          absl::MutexLock l(&mu);
          ++calls[k];
        }
      }
    });
  }
  {
    absl::MutexLock l(&mu);
    mu.Await(absl::Condition(
        +[](int* a) { return *a >= kThreads * kEach / 2; }, &acked));
  }
  ASSERT_TRUE(b->Close().ok());
  for (auto& t : threads) t.join();
  absl::MutexLock l(&mu);
  for (int k = 0; k < kThreads * kEach; ++k) EXPECT_EQ(calls[k], 1) << k;
  auto reopened = OpenOrDie(opener.get(), 2);
  auto all = ReadAll(reopened.get());
  ASSERT_TRUE(all.ok()) << all.status();
  std::set<std::string> logged;
  for (size_t i = 0; i < all->size(); ++i) {
    EXPECT_EQ((*all)[i].id, MessageId::Local(i));
    EXPECT_TRUE(logged.insert((*all)[i].data).second) << "twice: " << (*all)[i].data;
  }
  for (int k = 0; k < kThreads * kEach; ++k) {
    if (ok[k]) {
      EXPECT_TRUE(logged.contains(Payload(k))) << "acknowledged, not in the log: " << k;
    }
  }
}

// The active segment is preallocated ahead of its data (here up to the 1 MiB roll size); after
// a crash its unwritten rest reads as zeros, which recovery takes as the log's end (not
// damage), and a clean close gives the reservation back.
TEST_F(LocalBackendTest, PreallocatedTailSurvivesACrash) {
  constexpr uint64_t kSegment = 1 << 20;
  auto opener = Opener(kSegment);
  auto b = OpenOrDie(opener.get());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(AppendSync(b.get(), Payload(i)).ok());
  auto files = posix_.GetChildren(root_ + "/kf-dml_0");
  ASSERT_TRUE(files.ok());
  std::string segment;
  for (const auto& f : *files) {
    if (f.ends_with(".log")) segment = root_ + "/kf-dml_0/" + f;
  }
  ASSERT_FALSE(segment.empty());
  if (*posix_.GetFileSize(segment) < kSegment) GTEST_SKIP() << "no fallocate here";

  ASSERT_TRUE(fs_.SimulateCrash().ok());
  (void)b->Close();
  b.reset();
  fs_.Restart();
  EXPECT_EQ(*posix_.GetFileSize(segment), kSegment) << "the synced reservation survives";
  b = OpenOrDie(opener.get());
  auto all = ReadAll(b.get());
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[2].data, Payload(2));
  auto id = AppendSync(b.get(), "after");
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(*id, MessageId::Local(3));
  ASSERT_TRUE(b->Close().ok());
  EXPECT_LT(*posix_.GetFileSize(segment), 1024u) << "close cuts the segment to its data";
}

TEST_F(LocalBackendTest, TailStartCoversRequestedBytes) {
  LocalOpenerOptions o;
  o.root = root_;
  o.max_batch_bytes = 8 << 10;  // several batches, so the index has points to choose from
  auto opener = NewLocalOpener(o);
  auto b = OpenOrDie(opener.get());
  for (int i = 0; i < 399; ++i) ASSERT_TRUE(b->Append(std::string(1000, 'z'), nullptr).ok());
  ASSERT_TRUE(AppendSync(b.get(), std::string(1000, 'z')).ok());
  auto all = b->TailStart(1ull << 40);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, MessageId::Local(0));
  auto tail = b->TailStart(10'000);
  ASSERT_TRUE(tail.ok());
  // At least 10 entries of ~1 KiB must be covered, but the sparse index keeps it near.
  EXPECT_LE(tail->entry(), 390u);
  EXPECT_GE(tail->entry(), 300u);
}

TEST_F(LocalBackendTest, ReadOnlySeesNewDurableData) {
  auto opener = Opener();
  auto b = OpenOrDie(opener.get());
  for (int i = 0; i < 30; ++i) ASSERT_TRUE(AppendSync(b.get(), Payload(i)).ok());
  LocalOpenerOptions o;
  o.root = root_;
  auto reader_opener = NewLocalOpener(o);  // as another process would
  auto ro = reader_opener->Open({"kf-dml_0", Term(0), true});
  ASSERT_TRUE(ro.ok()) << ro.status();
  EXPECT_TRUE(absl::IsFailedPrecondition((*ro)->Append("x", nullptr).status()));
  EXPECT_EQ((*ro)->NextId(), MessageId::Local(30));
  auto scanner = (*ro)->Read(ReadOptions{ReadOptions::Start::kFrom, MessageId::Local(25)});
  ASSERT_TRUE(scanner.ok());
  for (int i = 25; i < 30; ++i) {
    auto e = (*scanner)->Next(absl::Now() + absl::Seconds(5));
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->data, Payload(i));
  }
  for (int i = 30; i < 80; ++i) ASSERT_TRUE(AppendSync(b.get(), Payload(i)).ok());
  for (int i = 30; i < 80; ++i) {
    auto e = (*scanner)->Next(absl::Now() + absl::Seconds(10));
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->id, MessageId::Local(i));
    EXPECT_EQ(e->data, Payload(i));
  }
  // A reader never fences: the writer keeps going.
  ASSERT_TRUE(AppendSync(b.get(), "more").ok());
}

}  // namespace
}  // namespace kf::wal::local
