// local_wal_bench: the local WAL backend against raw-disk baselines measured in the same run
// on the same directory (docs/quality-bars.md):
//  (a) 1 KiB appends with >= 1024 in flight vs sequential 1 MiB write + fdatasync bandwidth;
//  (b) 64 appender threads (each waits for its ack) vs a raw loop writing the WAL's own
//      average batch size + fdatasync each;
//  (c) one appender's p50/p99 latency vs one 1 KiB write + fdatasync (and, for reference, the
//      same into a preallocated file, as the WAL writes its segments);
//  (d) catch-up read of 64 MiB of 1 KiB entries from a cold page cache vs reading the same
//      segment files sequentially with 1 MiB reads (both after POSIX_FADV_DONTNEED).
// All four alternate the WAL and its baseline in rounds (see kRounds); (a) and (b) remove the
// log's older segments after each round, as its baselines delete their files (Wal::Reclaim),
// and (a) runs one uncounted warm-up round first.
// Each WAL figure is measured twice: on the backend alone, and through the full Wal adaptor
// (timetick stamping, message encoding, `_ik` deduplication, no-op spans) with 1 KiB payloads.
// Usage: local_wal_bench [--dir DIR] [--seconds S] [--layer backend|wal|both] [--figures abcd]
//                        [--no-ik] [--batch N]
// Through the adaptor, (a) hands its messages over 64 at a time in one Wal::AppendBatch (as a
// producer with that many queued would); --batch 1 measures one Wal::Append each.
// --no-ik appends adaptor messages without `_ik` (no deduplication): the difference to the
// default run is what the idempotency table costs.
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "bench_flags.h"
#include "bench_util.h"
#include "message/message.h"
#include "storage/fs/fault_injection_file_system.h"
#include "storage/fs/posix_file_system.h"
#include "storage/tso/timestamp_allocator.h"
#include "wal/backends/local/local_opener.h"
#include "wal/wal.h"

namespace {

using kf::bench::Clock;
using kf::bench::Die;
using kf::bench::Percentile;
using kf::bench::RawWriteSync;
using kf::bench::Seconds;
namespace stdfs = std::filesystem;

// CPU seconds used so far by the calling thread / by the whole process.
double CpuSeconds(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Adaptor messages carry `_ik` unless --no-ik.
bool g_idempotency_keys = true;

// Which append path a measurement drives.
enum class Layer { kBackend, kAdaptor };
const char* LayerName(Layer l) { return l == Layer::kBackend ? "backend" : "wal adaptor"; }

struct Wal {
  Layer layer;
  std::unique_ptr<kf::TimestampAllocator> tso;
  std::unique_ptr<kf::wal::Wal> adaptor;
  std::atomic<uint64_t> next_seq{0};
  kf::fs::PosixFileSystem posix;
  kf::fs::FaultInjectionFileSystem counting{&posix};  // only its counters are used
  std::unique_ptr<kf::wal::WalOpener> opener;
  std::unique_ptr<kf::wal::WalBackend> backend;
  kf::wal::WalBackend* log = nullptr;  // the backend, also once the adaptor owns it
  uint64_t reclaimed = 0;              // bytes Reclaim removed
  std::string dir;
  std::string vchannel;  // the adaptor's messages'

  Wal(const std::string& root, const std::string& name, Layer l) : layer(l) {
    kf::wal::local::LocalOpenerOptions o;
    o.root = root;
    o.fs = &counting;
    opener = kf::wal::local::NewLocalOpener(o);
    kf::wal::OpenOptions oo;
    oo.pchannel = name;
    oo.term = kf::Term(1);
    auto b = opener->Open(oo);
    if (!b.ok()) Die(b.status().ToString());
    backend = std::move(*b);
    log = backend.get();
    dir = root + "/" + name;
    if (layer == Layer::kAdaptor) {
      auto t = kf::TimestampAllocator::Open(root + "/" + name + ".tso", {});
      if (!t.ok()) Die(t.status().ToString());
      tso = std::move(*t);
      auto w = kf::wal::OpenWal({.pchannel = name, .tso = tso.get()}, std::move(backend));
      if (!w.ok()) Die(w.status().ToString());
      adaptor = std::move(*w);
      vchannel = std::string(adaptor->pchannel()) + "_bench";
    }
  }
  ~Wal() {
    if (adaptor) adaptor->Close();
    if (backend) (void)backend->Close();
    adaptor.reset();
    backend.reset();
    std::error_code ec;
    stdfs::remove_all(dir, ec);
  }
  // An adaptor message with a 1 KiB payload.
  kf::MutableMessage Message(const std::string& payload) {
    kf::MutableMessage m(kf::MessageType::kInsert, payload);
    m.set_vchannel(vchannel);
    if (g_idempotency_keys) {
      m.set_idempotency_key(
          absl::StrCat("bench:", next_seq.fetch_add(1, std::memory_order_relaxed)));
    }
    return m;
  }
  // Appends a 1 KiB-payload entry; `done` runs once durable. Thread-safe.
  template <typename Done>
  void Append(const std::string& payload, Done done) {
    if (layer == Layer::kBackend) {
      auto id = backend->Append(
          payload, [done = std::move(done)](absl::Status s) mutable { done(std::move(s)); });
      if (!id.ok()) Die(id.status().ToString());
      return;
    }
    adaptor->Append({}, Message(payload),
                    [done = std::move(done)](absl::StatusOr<kf::wal::AppendResult> r) mutable {
                      done(r.status());
                    });
  }
  // `count` such entries at once: through the adaptor one AppendBatch (as a producer with
  // that many messages queued hands them over; one Append for a count of 1), on the backend
  // `count` Appends.
  template <typename Done>
  void AppendMany(const std::string& payload, int count, const Done& done) {
    if (layer == Layer::kBackend || count == 1) {
      for (int i = 0; i < count; ++i) Append(payload, done);
      return;
    }
    std::vector<kf::wal::AppendRequest> batch;
    batch.reserve(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) {
      batch.push_back(
          {.ctx = {},
           .msg = Message(payload),
           .done = [done](absl::StatusOr<kf::wal::AppendResult> r) mutable { done(r.status()); }});
    }
    adaptor->AppendBatch(std::move(batch));
  }
  // Bytes appended so far: what the log holds plus what Reclaim removed (the files' sizes would
  // also count the active segment's preallocated rest).
  uint64_t LogBytes() const { return reclaimed + log->StoredBytes().value_or(0); }
  // Removes every segment but the active one, as the WAL of a deployment whose readers keep up
  // does. Called between rounds, so that the WAL writes the same kind of blocks as its
  // baseline, which deletes its file after each round: on this VM (ext4 mounted with
  // `discard`), 1 MiB write+fdatasync into a file that keeps growing ran at ~870 MiB/s for the
  // first GB and then at 150-230 MiB/s, while a file deleted and rewritten every 0.5 s stayed
  // at 610-970 MiB/s. A log keeping every segment was measured in the slow state and its
  // baseline in the fast one, so the ratio swung from 0.4 to 2.2 between runs.
  void Reclaim() {
    const kf::MessageId next = log->NextId();
    if (next.entry() == 0) return;
    const uint64_t before = log->StoredBytes().value_or(0);
    absl::Status s = log->Truncate(kf::MessageId::Local(next.entry() - 1));
    if (!s.ok()) Die("truncate: " + s.ToString());
    reclaimed += before - log->StoredBytes().value_or(0);
  }
};

// The disk of a VM drifts by 2x within seconds, so each figure alternates the WAL and its raw
// baseline in short rounds (kRounds of each) and sums each side's rounds: both see the same disk.
constexpr int kRounds = 4;

// (a) ---------------------------------------------------------------------------------------
void BenchInFlight(const std::string& root, double seconds, Layer layer, int batch) {
  Wal wal(root, "inflight", layer);
  constexpr int kWindow = 4096;  // >= 1024 in flight; ~2 MiB per group over the pipeline
  const std::string entry(1024, 'e');
  const double round_seconds = seconds / kRounds;
  kf::bench::InFlightWindow window(kWindow);
  std::atomic<uint64_t> acked{0};
  double wal_seconds = 0, seq_seconds = 0, thread_cpu = 0, process_cpu = 0;
  uint64_t appends = 0, seq_writes = 0, syncs = 0, bytes = 0;
  std::string rounds;  // each round's WAL/baseline MiB/s: how much the disk drifted
  // Round 0 warms up and is not counted: the first round's log is the only one written to
  // blocks no earlier round freed (see Reclaim), and it ran at half the speed of the others.
  for (int round = 0; round <= kRounds; ++round) {
    acked = 0;
    const uint64_t syncs0 = wal.counting.sync_count(), bytes0 = wal.LogBytes();
    const auto start = Clock::now();
    const double thread_cpu0 = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
    const double process_cpu0 = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
    // The clock is read every `batch` appends: it is the bench's cost, not the WAL's.
    const auto done = [&](absl::Status s) {
      if (!s.ok()) Die(s.ToString());
      acked.fetch_add(1, std::memory_order_relaxed);
      window.Release();
    };
    while (Seconds(Clock::now() - start) < round_seconds) {
      for (int i = 0; i < batch; ++i) window.Acquire();
      wal.AppendMany(entry, batch, done);
    }
    window.WaitEmpty();
    const double round_wal = Seconds(Clock::now() - start);
    const double round_thread_cpu = CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - thread_cpu0;
    const double round_process_cpu = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - process_cpu0;
    const uint64_t round_syncs = wal.counting.sync_count() - syncs0;
    const uint64_t round_bytes = wal.LogBytes() - bytes0;
    wal.Reclaim();
    double round_seq = 0;
    const auto raw = RawWriteSync(root + "/seq.raw", 1 << 20, round_seconds);
    for (double l : raw) round_seq += l;
    absl::StrAppendFormat(&rounds, "%s %.0f/%.0f%s", round == 0 ? "(" : "",
                          static_cast<double>(acked) / 1024 / round_wal,
                          static_cast<double>(raw.size()) / round_seq, round == 0 ? ")" : "");
    if (round == 0) continue;
    wal_seconds += round_wal;
    thread_cpu += round_thread_cpu;
    process_cpu += round_process_cpu;
    appends += acked;
    syncs += round_syncs;
    bytes += round_bytes;
    seq_seconds += round_seq;
    seq_writes += raw.size();
  }
  // The appending thread's CPU per append: what bounds this figure when it is CPU-bound.
  const double per_append = 1e6 / static_cast<double>(std::max<uint64_t>(appends, 1));
  const double thread_us = thread_cpu * per_append;
  const double process_us = process_cpu * per_append;
  const double wal_mibs = static_cast<double>(appends) * 1024 / wal_seconds / (1 << 20);
  const double seq_mibs = static_cast<double>(seq_writes) / seq_seconds;
  const std::string how = layer == Layer::kAdaptor && batch > 1
                              ? absl::StrFormat(" (AppendBatch of %d)", batch)
                              : std::string();
  std::printf(
      "(a) %s, 1KiB with 4096 in flight%s: %.1f MiB/s (%.0f appends/s, %.0f fdatasync/s, %.0f "
      "KiB/batch) | seq 1MiB write+fdatasync (alternating rounds) %.1f MiB/s | ratio %.2f (bar >= "
      "0.85)\n",
      LayerName(layer), how.c_str(), wal_mibs, static_cast<double>(appends) / wal_seconds,
      static_cast<double>(syncs) / wal_seconds,
      static_cast<double>(bytes) / static_cast<double>(std::max<uint64_t>(syncs, 1)) / 1024,
      seq_mibs, wal_mibs / seq_mibs);
  std::printf(
      "    %llu appends; CPU per append: appending thread %.2f us (%.0f%% busy), whole process "
      "%.2f us\n",
      static_cast<unsigned long long>(appends), thread_us, thread_cpu / wal_seconds * 100,
      process_us);
  // The ratio above counts payload bytes; the disk also writes the framing and, through the
  // adaptor, every message's properties.
  const double log_mibs = static_cast<double>(bytes) / wal_seconds / (1 << 20);
  std::printf(
      "    bytes written to the log: %.1f MiB/s (%.3f per payload byte), %.2f of the seq loop\n",
      log_mibs, log_mibs / wal_mibs, log_mibs / seq_mibs);
  std::printf("    each round (warm-up in parentheses), WAL/seq MiB/s:%s\n", rounds.c_str());
}

// (d) ---------------------------------------------------------------------------------------
// Drops the log's pages from the page cache (they are clean: fdatasynced), so reads hit the disk.
void DropCache(const std::string& dir) {
  for (const auto& e : stdfs::directory_iterator(dir)) {
    int fd = ::open(e.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);  // only clean pages can be dropped
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// Sequential 1 MiB reads of the segment files, in log order, up to the log's `bytes`: the
// disk's read bandwidth for the same bytes (not the active segment's preallocated rest).
double RawReadSeconds(const std::string& dir, uint64_t bytes) {
  std::vector<stdfs::path> segments;
  for (const auto& e : stdfs::directory_iterator(dir)) {
    if (e.path().extension() == ".log") segments.push_back(e.path());
  }
  std::sort(segments.begin(), segments.end());  // names are fixed-width base offsets
  std::vector<char> buf(1 << 20);
  const auto start = Clock::now();
  for (const auto& path : segments) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) Die("open " + path.string());
    ssize_t n;
    while (bytes > 0 && (n = ::read(fd, buf.data(), std::min<uint64_t>(buf.size(), bytes))) > 0) {
      bytes -= static_cast<uint64_t>(n);
    }
    ::close(fd);
  }
  return Seconds(Clock::now() - start);
}

// One catch-up pass over the log's first `entries` entries; its seconds.
double CatchupSeconds(Wal& wal, uint64_t entries) {
  uint64_t read = 0;
  const auto start = Clock::now();
  if (wal.layer == Layer::kBackend) {
    auto scanner = wal.backend->Read({.start = kf::wal::ReadOptions::Start::kEarliest});
    if (!scanner.ok()) Die(scanner.status().ToString());
    while (read < entries) {
      auto e = (*scanner)->Next(absl::Now() + absl::Seconds(10));
      if (!e.ok()) Die("catch-up read: " + e.status().ToString());
      ++read;
    }
  } else {
    auto scanner = wal.adaptor->Read({});
    if (!scanner.ok()) Die(scanner.status().ToString());
    while (read < entries) {
      auto m = (*scanner)->Next({}, absl::Now() + absl::Seconds(10));
      if (!m.ok()) Die("catch-up read: " + m.status().ToString());
      if ((*m)->type() == kf::MessageType::kInsert) ++read;
    }
  }
  return Seconds(Clock::now() - start);
}

void BenchCatchup(const std::string& root, Layer layer) {
  constexpr uint64_t kEntries = 64 << 10;  // 64 MiB of 1 KiB payloads
  Wal wal(root, "catchup", layer);
  const std::string entry(1024, 'c');
  kf::bench::InFlightWindow window(4096);
  for (uint64_t i = 0; i < kEntries; ++i) {
    window.Acquire();
    wal.Append(entry, [&](absl::Status s) {
      if (!s.ok()) Die(s.ToString());
      window.Release();
    });
  }
  window.WaitEmpty();
  const uint64_t log_bytes = wal.LogBytes();
  // The disk's read bandwidth swung from 670 to 1780 MiB/s between runs: raw reads and
  // catch-up passes alternate (kRounds of each, cold cache before each) and each side's rounds
  // are summed.
  double raw = 0, catchup = 0;
  std::string rounds;  // each round's catch-up/raw MiB/s
  const double mib = static_cast<double>(log_bytes) / (1 << 20);
  for (int round = 0; round < kRounds; ++round) {
    DropCache(wal.dir);
    const double round_raw = RawReadSeconds(wal.dir, log_bytes);
    DropCache(wal.dir);
    const double round_catchup = CatchupSeconds(wal, kEntries);
    raw += round_raw;
    catchup += round_catchup;
    absl::StrAppendFormat(&rounds, " %.0f/%.0f", mib / round_catchup, mib / round_raw);
  }
  std::printf(
      "(d) %s, catch-up read of %.0f MiB (%llu entries), cold cache: %.1f MiB/s (%.0f entries/s)"
      " | seq 1MiB read of the same files %.1f MiB/s | ratio %.2f (recovery replay bar >= 0.5)\n",
      LayerName(layer), mib, static_cast<unsigned long long>(kEntries), mib * kRounds / catchup,
      static_cast<double>(kEntries) * kRounds / catchup, mib * kRounds / raw, raw / catchup);
  std::printf("    each round, catch-up/raw MiB/s:%s\n", rounds.c_str());
}

// (b) ---------------------------------------------------------------------------------------
void BenchAppenders(const std::string& root, double seconds, Layer layer) {
  constexpr int kThreads = 64;
  const double round_seconds = seconds / kRounds;
  double wal_seconds = 0, raw_seconds = 0, raw_bytes = 0;
  uint64_t wal_bytes = 0, syncs = 0, appends = 0, raw_syncs = 0;
  std::string rounds;  // each round's WAL/raw fdatasyncs per second
  Wal wal(root, "appenders", layer);
  for (int round = 0; round < kRounds; ++round) {
    std::atomic<bool> stop{false};
    std::atomic<uint64_t> ops{0};
    const uint64_t syncs0 = wal.counting.sync_count();
    const uint64_t bytes0 = wal.LogBytes();
    std::vector<std::thread> threads;
    const auto start = Clock::now();
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        const std::string entry(1024, 'p');
        while (!stop.load(std::memory_order_relaxed)) {
          kf::bench::Ack<absl::Status> done;
          wal.Append(entry, [&](absl::Status s) { done.Set(std::move(s)); });
          if (!done.Wait().ok()) Die("append failed");
          ops.fetch_add(1, std::memory_order_relaxed);
        }
      });
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(round_seconds));  // bench pacing
    stop = true;
    for (auto& th : threads) th.join();
    const double round_wal = Seconds(Clock::now() - start);
    wal_seconds += round_wal;
    const uint64_t round_syncs = wal.counting.sync_count() - syncs0;
    const uint64_t round_bytes = wal.LogBytes() - bytes0;
    wal.Reclaim();
    wal_bytes += round_bytes;
    syncs += round_syncs;
    appends += ops.load();
    // The raw loop writes this round's average batch.
    const size_t batch = std::max<size_t>(round_bytes / std::max<uint64_t>(round_syncs, 1), 1);
    auto raw = RawWriteSync(root + "/batch.raw", batch, round_seconds);
    double round_raw = 0;
    for (double l : raw) round_raw += l;
    raw_seconds += round_raw;
    absl::StrAppendFormat(&rounds, " %.0f/%.0f", static_cast<double>(round_syncs) / round_wal,
                          static_cast<double>(raw.size()) / round_raw);
    raw_bytes += static_cast<double>(raw.size() * batch);
    raw_syncs += raw.size();
  }
  const double avg_batch =
      static_cast<double>(wal_bytes) / static_cast<double>(std::max<uint64_t>(syncs, 1));
  const double wal_bytes_per_s = static_cast<double>(wal_bytes) / wal_seconds;
  const double raw_bytes_per_s = raw_bytes / raw_seconds;
  std::printf(
      "(b) %s, 64 appenders: %.0f appends/s, %.1f MiB/s, %.0f fdatasync/s, avg batch %.0f B"
      " | raw loop of the same batch sizes (alternating rounds) %.1f MiB/s (%.0f/s) | ratio %.2f"
      " (bar >= 0.85)\n",
      LayerName(layer), static_cast<double>(appends) / wal_seconds, wal_bytes_per_s / (1 << 20),
      static_cast<double>(syncs) / wal_seconds, avg_batch, raw_bytes_per_s / (1 << 20),
      static_cast<double>(raw_syncs) / raw_seconds, wal_bytes_per_s / raw_bytes_per_s);
  std::printf("    each round, WAL/raw fdatasyncs per second:%s\n", rounds.c_str());
}

// (c) ---------------------------------------------------------------------------------------
void BenchLatency(const std::string& root, double seconds, Layer layer) {
  constexpr size_t kMaxOpsPerRound = 1250;
  const double round_seconds = seconds / kRounds;
  std::vector<double> wal_lat, raw, raw_prealloc;
  Wal wal(root, "latency", layer);
  const std::string entry(1024, 'l');
  for (int round = 0; round < kRounds; ++round) {
    const auto start = Clock::now();
    for (size_t i = 0; i < kMaxOpsPerRound && Seconds(Clock::now() - start) < round_seconds; ++i) {
      const auto t0 = Clock::now();
      kf::bench::Ack<absl::Status> done;
      wal.Append(entry, [&](absl::Status s) { done.Set(std::move(s)); });
      if (!done.Wait().ok()) Die("append failed");
      wal_lat.push_back(Seconds(Clock::now() - t0));
    }
    for (double l : RawWriteSync(root + "/lat.raw", 1024, round_seconds, kMaxOpsPerRound)) {
      raw.push_back(l);
    }
    // The WAL preallocates its segments; the same trick in the raw loop shows its overhead
    // over the cheapest fdatasync this disk offers.
    for (double l : RawWriteSync(root + "/lat.raw", 1024, round_seconds, kMaxOpsPerRound,
                                 kf::wal::local::LocalOpenerOptions{}.segment_bytes)) {
      raw_prealloc.push_back(l);
    }
  }
  const double wp50 = Percentile(wal_lat, 0.5) * 1e3, wp99 = Percentile(wal_lat, 0.99) * 1e3;
  const double rp50 = Percentile(raw, 0.5) * 1e3, rp99 = Percentile(raw, 0.99) * 1e3;
  const double pp50 = Percentile(raw_prealloc, 0.5) * 1e3;
  const double pp99 = Percentile(raw_prealloc, 0.99) * 1e3;
  std::printf(
      "(c) %s, 1 appender 1KiB: p50 %.3f ms p99 %.3f ms | raw write+fdatasync (alternating "
      "rounds) p50 %.3f ms p99 %.3f ms, into a preallocated file p50 %.3f ms p99 %.3f ms | p50 "
      "ratio %.2f (bar <= 1.5), %.2f to the preallocated loop\n",
      LayerName(layer), wp50, wp99, rp50, rp99, pp50, pp99, wp50 / rp50, wp50 / pp50);
}

}  // namespace

int main(int argc, char** argv) {
  kf::bench::SetProgramName("local_wal_bench");
  std::string dir;
  double seconds = 4;
  std::string layer = "both";
  std::string figures = "abcd";
  bool no_ik = false;
  int batch = 64;
  kf::bench::FlagSet flags(argv[0]);
  flags.AddDataDir(&dir, "WAL segments, raw baseline files");
  flags.Add("--seconds", &seconds, "S", "seconds per measurement");
  flags.Add("--layer", &layer, "backend|wal|both",
            "the backend alone, through the Wal adaptor, or both");
  flags.Add("--figures", &figures, "abcd", "the figures to measure (see the top of the source)");
  flags.AddSwitch("--no-ik", &no_ik,
                  "adaptor messages without `_ik`: the difference is what deduplication costs");
  flags.Add("--batch", &batch, "N",
            "(a): messages per AppendBatch through the adaptor (1: one Append each)");
  flags.Parse(argc, argv);
  if (batch < 1 || batch > 1024) flags.Fail("--batch must be 1..1024");
  if (layer != "backend" && layer != "wal" && layer != "both") {
    flags.Fail("--layer must be backend, wal or both");
  }
  std::vector<Layer> layers = {Layer::kBackend, Layer::kAdaptor};
  if (layer == "backend") layers = {Layer::kBackend};
  if (layer == "wal") layers = {Layer::kAdaptor};
  g_idempotency_keys = !no_ik;
  const std::string root = dir + "/local_wal_bench";
  stdfs::create_directories(root);
  std::printf("local_wal_bench: dir %s, %.1f s per measurement\n", root.c_str(), seconds);
  for (Layer layer : layers) {
    if (figures.find('a') != std::string::npos) BenchInFlight(root, seconds, layer, batch);
    if (figures.find('b') != std::string::npos) BenchAppenders(root, seconds, layer);
    if (figures.find('c') != std::string::npos) BenchLatency(root, seconds, layer);
    if (figures.find('d') != std::string::npos) BenchCatchup(root, layer);
  }
  std::error_code ec;
  stdfs::remove_all(root, ec);
  return 0;
}
