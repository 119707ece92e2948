// The WAL adaptor's metrics (wal_metrics.h) over the memory backend, and the local backend's
// StoredBytes, each with its own Registry.
#include "wal/wal_metrics.h"

#include <unistd.h>

#include <filesystem>

#include "common/errors.h"
#include "common/metrics/registry.h"
#include "gtest/gtest.h"
#include "message/builders.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/backends/local/local_opener.h"
#include "wal/testing/memory_backend.h"
#include "wal/wal.h"

namespace kf::wal {
namespace {

using testing::MemoryWalBackend;

constexpr char kPChannel[] = "kf-dml_0";

MutableMessage Insert(std::string payload, std::string ik = "") {
  MutableMessage m(MessageType::kInsert, std::move(payload));
  m.set_vchannel("kf-dml_0_v");
  if (!ik.empty()) m.set_idempotency_key(std::move(ik));
  return m;
}

class WalMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kf-wal-metrics-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    tso_ = *TimestampAllocator::Open((dir_ / "tso").string(), {});
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Wal> Open(std::unique_ptr<WalBackend> b) {
    auto wal = OpenWal({.pchannel = kPChannel,
                        .tso = tso_.get(),
                        .timetick_interval = absl::Hours(1),  // no TimeTicks of its own
                        .metrics = &registry_},
                       std::move(b));
    EXPECT_TRUE(wal.ok()) << wal.status();
    return std::move(*wal);
  }

  uint64_t Appends(std::string_view code) {
    return registry_.GetCounter("kf_wal_appends_total", "", {"pchannel", "code"})
        .With({kPChannel, code})
        ->value();
  }
  metrics::Histogram::Snapshot Latency() {
    return registry_
        .GetHistogram("kf_wal_append_latency_seconds", "", {"pchannel"},
                      metrics::LatencyBucketsSeconds())
        .With({kPChannel})
        ->Read();
  }
  uint64_t Counter(const std::string& name, std::vector<std::string> labels,
                   std::vector<std::string> values) {
    return registry_.GetCounter(name, "", std::move(labels)).With(values)->value();
  }

  std::filesystem::path dir_;
  std::unique_ptr<TimestampAllocator> tso_;
  metrics::Registry registry_;
};

TEST_F(WalMetricsTest, AppendsAreCountedByCodeWithBytesAndLatency) {
  auto backend = std::make_unique<MemoryWalBackend>(kPChannel);
  MemoryWalBackend* b = backend.get();
  auto wal = Open(std::move(backend));
  for (int i = 0; i < 10; ++i)
    ASSERT_TRUE(wal->AppendSync({}, Insert("m" + std::to_string(i))).ok());
  // Rejected by the adaptor (a txn control message without `_tx`) and by the backend.
  MutableMessage commit(MessageType::kCommitTxn, "");
  commit.set_vchannel("kf-dml_0_v");
  EXPECT_EQ(GetStreamingCode(wal->AppendSync({}, std::move(commit)).status()),
            StreamingCode::kInvalidArgument);
  b->FailNextAppends(1, StreamingError(StreamingCode::kDataLoss, "injected"));
  EXPECT_FALSE(wal->AppendSync({}, Insert("lost")).ok());

  EXPECT_EQ(Appends("OK"), 10u);
  EXPECT_EQ(Appends("INVALID_ARGUMENT"), 1u);
  EXPECT_EQ(Appends("DATA_LOSS"), 1u);
  uint64_t stored = 0;
  for (const std::string& e : b->DurableEntries()) stored += e.size();
  EXPECT_EQ(Counter("kf_wal_append_bytes_total", {"pchannel"}, {kPChannel}), stored);
  metrics::Histogram::Snapshot lat = Latency();
  EXPECT_EQ(lat.count, 10u);  // acknowledged appends only
  EXPECT_GT(lat.sum, 0);

  wal->Close();
  EXPECT_EQ(GetStreamingCode(wal->AppendSync({}, Insert("late")).status()),
            StreamingCode::kOnShutdown);
  EXPECT_EQ(Appends("ON_SHUTDOWN"), 1u);
}

TEST_F(WalMetricsTest, RetriesAnsweredFromTheIdempotencyTableAreNotAppends) {
  auto wal = Open(std::make_unique<MemoryWalBackend>(kPChannel));
  ASSERT_TRUE(wal->AppendSync({}, Insert("a", "p1:1")).ok());
  ASSERT_TRUE(wal->AppendSync({}, Insert("a", "p1:1")).ok());
  EXPECT_EQ(Appends("OK"), 1u);
  EXPECT_EQ(Counter("kf_wal_deduplicated_appends_total", {"pchannel"}, {kPChannel}), 1u);
}

TEST_F(WalMetricsTest, ReadMessagesAreCountedByMode) {
  auto wal = Open(std::make_unique<MemoryWalBackend>(kPChannel));
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(wal->AppendSync({}, Insert("old")).ok());
  auto scanner = wal->Read({});
  ASSERT_TRUE(scanner.ok()) << scanner.status();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE((*scanner)->Next({}, absl::Now() + absl::Seconds(10)).ok());
  }
  // Caught up: the next message comes from the write-ahead buffer.
  ASSERT_TRUE(wal->AppendSync({}, Insert("new")).ok());
  ASSERT_TRUE((*scanner)->Next({}, absl::Now() + absl::Seconds(10)).ok());
  const uint64_t catchup =
      Counter("kf_wal_read_messages_total", {"pchannel", "mode"}, {kPChannel, "catchup"});
  const uint64_t tailing =
      Counter("kf_wal_read_messages_total", {"pchannel", "mode"}, {kPChannel, "tailing"});
  EXPECT_EQ(catchup + tailing, 6u);
  EXPECT_GE(tailing, 1u);
}

TEST_F(WalMetricsTest, LocalBackendReportsItsStoredBytes) {
  auto opener = local::NewLocalOpener({.root = (dir_ / "wal").string()});
  auto backend = opener->Open({.pchannel = kPChannel, .term = Term(1)});
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto wal = Open(*std::move(backend));
  ASSERT_EQ(wal->StoredBytes(), std::optional<uint64_t>(0));
  ASSERT_TRUE(wal->AppendSync({}, Insert(std::string(1000, 'x'))).ok());
  ASSERT_TRUE(wal->StoredBytes().has_value());
  EXPECT_GT(*wal->StoredBytes(), 1000u);  // the entry plus batch framing
  uint64_t on_disk = 0;
  for (const auto& f : std::filesystem::recursive_directory_iterator(dir_ / "wal")) {
    if (f.is_regular_file()) on_disk += f.file_size();
  }
  EXPECT_LE(*wal->StoredBytes(), on_disk);
}

// Each group commit is one flush: appends one at a time (each waits for its fdatasync) are a
// group each.
TEST_F(WalMetricsTest, LocalBackendObservesEachFlush) {
  metrics::Histogram* flushes = FlushDuration(registry_, kPChannel);
  auto opener = local::NewLocalOpener({.root = (dir_ / "wal").string()});
  auto backend = opener->Open({.pchannel = kPChannel, .term = Term(1), .flush_duration = flushes});
  ASSERT_TRUE(backend.ok()) << backend.status();
  auto wal = Open(*std::move(backend));
  const metrics::Histogram::Snapshot before = flushes->Read();
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(wal->AppendSync({}, Insert("m")).ok());
  const metrics::Histogram::Snapshot after = flushes->Read();
  EXPECT_EQ(after.count - before.count, 5u);
  EXPECT_GT(after.sum, before.sum);
}

}  // namespace
}  // namespace kf::wal
