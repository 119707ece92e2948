// Embedded-store-only behaviour: persistence across restarts, crash recovery over the
// fault-injecting file system (torn tails, unsynced writes), corruption, snapshots.
// The MetaStore contract itself is in meta_store_contract_test.cc.
#include "storage/meta/embedded_meta_store.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "storage/fs/fault_injection_file_system.h"
#include "storage/meta/meta_log.h"
#include "storage/meta/testing/watch_recorder.h"

namespace kf::meta {
namespace {

using ::kf::meta::testing::WatchRecorder;

absl::Time Deadline() { return absl::Now() + absl::Seconds(10); }

class EmbeddedMetaStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (std::filesystem::temp_directory_path() /
            ("kf-meta-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    std::filesystem::remove_all(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<EmbeddedMetaStore> Open(EmbeddedMetaStore::Options options = {}) {
    auto store = EmbeddedMetaStore::Open(dir_, options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  std::vector<std::string> LogFiles() const {
    std::vector<std::string> logs;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) {
      const std::string name = e.path().filename().string();
      if (name.ends_with(".log")) logs.push_back(name);
    }
    std::sort(logs.begin(), logs.end());
    return logs;
  }

  // Flips one byte of the (only) log file at `offset`.
  void FlipLogByte(uint64_t offset) {
    const std::string path = dir_ + "/" + LogFiles().at(0);
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(offset));
    f.put(static_cast<char>(c ^ 0x40));
  }

  std::string dir_;
};

TEST_F(EmbeddedMetaStoreTest, RestartKeepsDataRevisionAndLeases) {
  int64_t revision = 0;
  LeaseId lease = kNoLease;
  {
    auto store = Open();
    ASSERT_TRUE(store->Put("/a", "1", Deadline()).ok());
    ASSERT_TRUE(store->Put("/b", "2", Deadline()).ok());
    ASSERT_TRUE(store->Put("/a", "3", Deadline()).ok());
    auto grant = store->GrantLease(absl::Seconds(30), Deadline());
    ASSERT_TRUE(grant.ok());
    lease = grant->id;
    ASSERT_TRUE(store->Put("/node", "n1", Deadline(), lease).ok());
    revision = store->Delete("/b", Deadline())->revision;
  }
  auto store = Open();
  auto a = store->Get("/a", Deadline());
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->kv.value, "3");
  EXPECT_EQ(a->kv.version, 2);
  EXPECT_EQ(a->revision, revision);
  EXPECT_TRUE(absl::IsNotFound(store->Get("/b", Deadline()).status()));
  EXPECT_EQ(store->Get("/node", Deadline())->kv.lease, lease);
  EXPECT_EQ(*store->Put("/c", "4", Deadline()), revision + 1);
  // The lease survived with a fresh TTL; a new lease never reuses its id.
  EXPECT_TRUE(store->KeepAliveOnce(lease, Deadline()).ok());
  EXPECT_GT(store->GrantLease(absl::Seconds(5), Deadline())->id, lease);
  ASSERT_TRUE(store->RevokeLease(lease, Deadline()).ok());
  EXPECT_TRUE(absl::IsNotFound(store->Get("/node", Deadline()).status()));
}

TEST_F(EmbeddedMetaStoreTest, HistoryAfterRestartStartsAtTheLog) {
  int64_t first = 0;
  {
    auto store = Open();
    first = *store->Put("/w/a", "1", Deadline());
    ASSERT_TRUE(store->Put("/w/b", "2", Deadline()).ok());
  }
  auto store = Open();
  WatchRecorder rec;
  auto watch = store->Watch("/w/", first, rec.Callback(), Deadline());
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(rec.WaitForEvents(2));  // replayed from the log: no snapshot yet
  EXPECT_EQ(rec.events()[1].kv.value, "2");
}

TEST_F(EmbeddedMetaStoreTest, TornTailIsCutAndNeverAcknowledged) {
  fs::FaultInjectionFileSystem ffs(fs::DefaultFileSystem());
  auto store = Open({.fs = &ffs});
  ASSERT_TRUE(store->Put("/a", "1", Deadline()).ok());
  ASSERT_TRUE(store->Put("/b", "2", Deadline()).ok());
  ffs.PartialNthWrite(1, 12);  // the next record stops inside its payload
  EXPECT_FALSE(store->Put("/c", "3", Deadline()).ok());
  // The failure is sticky: nothing more is written after a failed write.
  EXPECT_FALSE(store->Put("/d", "4", Deadline()).ok());
  EXPECT_TRUE(absl::IsNotFound(store->Get("/c", Deadline()).status()));  // readers never saw it
  ASSERT_TRUE(ffs.SimulateCrash().ok());
  store.reset();
  ffs.Restart();

  store = Open({.fs = &ffs});
  EXPECT_EQ(store->Get("/a", Deadline())->kv.value, "1");
  EXPECT_EQ(store->Get("/b", Deadline())->kv.value, "2");
  EXPECT_TRUE(absl::IsNotFound(store->Get("/c", Deadline()).status()));
  ASSERT_TRUE(store->Put("/e", "5", Deadline()).ok());  // appends after the cut
  store.reset();
  store = Open({.fs = &ffs});
  EXPECT_EQ(store->Get("/e", Deadline())->kv.value, "5");
  EXPECT_EQ(store->Range("/", Deadline())->kvs.size(), 3u);
}

TEST_F(EmbeddedMetaStoreTest, FailedSyncIsNotAcknowledgedAndLostInACrash) {
  fs::FaultInjectionFileSystem ffs(fs::DefaultFileSystem());
  auto store = Open({.fs = &ffs});
  ASSERT_TRUE(store->Put("/a", "1", Deadline()).ok());
  ffs.FailNthSync(1);
  EXPECT_FALSE(store->Put("/b", "2", Deadline()).ok());
  EXPECT_FALSE(store->GrantLease(absl::Seconds(5), Deadline()).ok());  // sticky
  ASSERT_TRUE(ffs.SimulateCrash().ok());
  store.reset();
  ffs.Restart();
  store = Open({.fs = &ffs});
  EXPECT_TRUE(store->Get("/a", Deadline()).ok());
  EXPECT_TRUE(absl::IsNotFound(store->Get("/b", Deadline()).status()));
}

TEST_F(EmbeddedMetaStoreTest, CorruptRecordBeforeTheTailIsDataLoss) {
  {
    auto store = Open();
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(store->Put("/k", std::to_string(i), Deadline()).ok());
  }
  FlipLogByte(kLogHeaderSize + kRecordHeaderSize + 2);  // inside the first record's payload
  auto store = EmbeddedMetaStore::Open(dir_, {});
  EXPECT_EQ(store.status().code(), absl::StatusCode::kDataLoss) << store.status();
}

TEST_F(EmbeddedMetaStoreTest, BadLastRecordIsATornTail) {
  {
    auto store = Open();
    ASSERT_TRUE(store->Put("/a", "1", Deadline()).ok());
    ASSERT_TRUE(store->Put("/b", "2", Deadline()).ok());
  }
  // A checksum failure with nothing after it is what a crash mid-append leaves; the record
  // is dropped (LevelDB's rule). Only the last record can be lost this way.
  FlipLogByte(std::filesystem::file_size(dir_ + "/" + LogFiles().at(0)) - 1);
  auto store = Open();
  EXPECT_TRUE(store->Get("/a", Deadline()).ok());
  EXPECT_TRUE(absl::IsNotFound(store->Get("/b", Deadline()).status()));
}

TEST_F(EmbeddedMetaStoreTest, SnapshotCompactsTheLog) {
  int64_t first = 0, last = 0;
  {
    auto store = Open({.snapshot_threshold_bytes = 2048});
    for (int i = 0; i < 100; ++i) {
      auto rev =
          store->Put("/k/" + std::to_string(i % 10), std::string(100, 'a' + i % 26), Deadline());
      ASSERT_TRUE(rev.ok()) << rev.status();
      if (i == 0) first = *rev;
      last = *rev;
    }
  }
  EXPECT_TRUE(std::filesystem::exists(dir_ + "/" + kSnapshotFileName));
  const auto logs = LogFiles();
  ASSERT_EQ(logs.size(), 1u);  // older logs removed
  EXPECT_NE(logs[0], LogFileName(1));
  EXPECT_LT(std::filesystem::file_size(dir_ + "/" + logs[0]), 4096u);

  auto store = Open({.snapshot_threshold_bytes = 2048});
  auto range = store->Range("/k/", Deadline());
  ASSERT_TRUE(range.ok());
  ASSERT_EQ(range->kvs.size(), 10u);
  EXPECT_EQ(range->revision, last);
  EXPECT_EQ(range->kvs[9].value, std::string(100, 'a' + 99 % 26));
  EXPECT_EQ(range->kvs[9].version, 10);
  // History before the snapshot is gone after a restart.
  WatchRecorder rec;
  auto watch = store->Watch("/k/", first, rec.Callback(), Deadline());
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(rec.WaitForError());
  EXPECT_EQ(rec.error().code(), absl::StatusCode::kOutOfRange);
}

TEST_F(EmbeddedMetaStoreTest, FailedSnapshotKeepsTheTriggeringWriteAndStopsWriting) {
  fs::FaultInjectionFileSystem ffs(fs::DefaultFileSystem());
  auto store = Open({.fs = &ffs, .snapshot_threshold_bytes = 1});  // every write snapshots
  ffs.FailNthSync(2);  // 1: the record; 2: the snapshot's temp file
  EXPECT_TRUE(store->Put("/a", "1", Deadline()).ok());  // durable before the snapshot began
  EXPECT_FALSE(store->Put("/b", "2", Deadline()).ok());
  ASSERT_TRUE(ffs.SimulateCrash().ok());
  store.reset();
  ffs.Restart();
  store = Open({.fs = &ffs});
  EXPECT_EQ(store->Get("/a", Deadline())->kv.value, "1");
  EXPECT_TRUE(absl::IsNotFound(store->Get("/b", Deadline()).status()));
}

TEST_F(EmbeddedMetaStoreTest, SnapshotSurvivesCrashes) {
  fs::FaultInjectionFileSystem ffs(fs::DefaultFileSystem());
  auto store = Open({.fs = &ffs, .snapshot_threshold_bytes = 512});
  for (int i = 0; i < 40; ++i) {
    ASSERT_TRUE(store->Put("/k/" + std::to_string(i), std::string(50, 'x'), Deadline()).ok());
  }
  ASSERT_TRUE(ffs.SimulateCrash().ok());
  store.reset();
  ffs.Restart();
  store = Open({.fs = &ffs});
  EXPECT_EQ(store->Range("/k/", Deadline())->kvs.size(), 40u);
}

TEST_F(EmbeddedMetaStoreTest, HistoryLimitCompactsOldRevisions) {
  auto store = Open({.history_limit = 5});
  const int64_t first = *store->Put("/h/a", "1", Deadline());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(store->Put("/h/a", "x", Deadline()).ok());
  WatchRecorder rec;
  auto watch = store->Watch("/h/", first, rec.Callback(), Deadline());
  ASSERT_TRUE(watch.ok());
  ASSERT_TRUE(rec.WaitForError());
  EXPECT_EQ(rec.error().code(), absl::StatusCode::kOutOfRange);
}

TEST_F(EmbeddedMetaStoreTest, WatchCanBeDestroyedFromItsOwnCallback) {
  auto store = Open();
  std::unique_ptr<WatchHandle> handle;
  absl::Mutex mu;
  bool destroyed = false;
  auto watch = store->Watch(
      "/", 0,
      [&](const WatchResponse&) {
        absl::MutexLock l(&mu);
        handle.reset();
        destroyed = true;
      },
      Deadline());
  ASSERT_TRUE(watch.ok());
  {
    absl::MutexLock l(&mu);
    handle = *std::move(watch);
  }
  ASSERT_TRUE(store->Put("/x", "1", Deadline()).ok());
  absl::MutexLock l(&mu);
  EXPECT_TRUE(mu.AwaitWithTimeout(absl::Condition(&destroyed), absl::Seconds(10)));
}

}  // namespace
}  // namespace kf::meta
