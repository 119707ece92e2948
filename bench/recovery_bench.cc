// recovery_bench: bounded recovery as a user meets it (docs/recovery-storage.md), each figure
// next to its baseline from the same run.
//
// Starts the real `kingfisher run standalone` (the binary next to this one, or --bin-dir) and,
// through the public client library, for a history of H = --rows and of 10 x H rows (--dim
// floats each, inserted 1000 per message into one shard):
//   - with recovery storage (segments sealed every --seal-rows rows, flushed, a checkpoint
//     every second, the WAL truncated below each checkpoint: --wal-retention 0); the history
//     is flushed (`kfctl flush`) and followed by the same tail of --tail-rows rows, which a
//     restart replays from the log whatever the history;
//   - baseline: the same history and tail with no checkpoint (no seals, a 1 h checkpoint
//     interval), so a restart replays the whole log — what every open did before.
// After the load it waits until a checkpoint covers it, kills the server with SIGKILL,
// restarts it --restarts times and times the medians: start to healthy (the WALs opened),
// start to the first strong search answered (the shard loaded and the tail replayed), and
// reports the WAL and object bytes on disk. Recovery storage holds when its restart time barely
// moves from H to 10 x H while the baseline's grows with the history.
//
// Also: flushing a sealed segment (encode + PUT) against a raw PUT of the same bytes, in this
// process, into the local object store and into a real Ceph RGW started on loopback; and a
// soak (Soak below): RSS, growing memory and WAL bytes under a sustained insert load.
//
// Usage: recovery_bench [--rows N] [--dim D] [--seal-rows N] [--restarts N] [--tail-rows N]
//                       [--soak-seconds S] [--soak-rate N] [--soak-limit-mib M]
//                       [--soak-cgroup 0|1] [--dir DIR]
//                       [--bin-dir DIR]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "bench_flags.h"
#include "bench_util.h"
#include "kingfisher/client.h"
#include "kingfisher/collections.h"
#include "kingfisher/producer.h"
#include "kingfisher/search.h"
#include "memory_cgroup.h"
#include "search/growing_segment.h"
#include "search/sealed_segment_format.h"
#include "server_process.h"
#include "storage/fs/file_system.h"
#include "storage/object/local_object_store.h"
#include "storage/object/s3_object_store.h"
#include "storage/object/testing/rgw_process.h"

namespace {

using kf::bench::Clock;
using kf::bench::Die;
using kf::bench::Seconds;

struct Flags {
  int rows = 20000;
  int dim = 128;
  int seal_rows = 16384;
  int restarts = 5;      // kill -9 and restart this often per history; medians printed
  int tail_rows = 2000;  // rows after the last flush, replayed from the log at a restart
  int soak_seconds = 600;
  int soak_rate = 2000;      // rows per second
  int soak_limit_mib = 256;  // memory_limit, and the soak's cgroup limit
  int soak_cgroup = 1;       // the soak server in a memory cgroup of soak_limit_mib (if allowed)
  kf::bench::BenchDirs dirs;
};

// The resident memory of `pid` in bytes: all of it (VmRSS) and its anonymous part (RssAnon, what
// memory_limit bounds: not the pages of mapped files); 0 if unreadable.
struct Rss {
  uint64_t all = 0;
  uint64_t anonymous = 0;
};
Rss RssOf(pid_t pid) {
  Rss out;
  std::FILE* f = std::fopen(absl::StrCat("/proc/", pid, "/status").c_str(), "r");
  if (f == nullptr) return out;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "VmRSS: %lu kB", &kib) == 1) out.all = kib << 10;
    if (std::sscanf(line, "RssAnon: %lu kB", &kib) == 1) out.anonymous = kib << 10;
  }
  std::fclose(f);
  return out;
}

// A sustained insert load at --soak-rate rows/s for --soak-seconds against a server whose own
// memory (anonymous resident, the whole process) is limited to --soak-limit-mib, segments
// sealed, flushed (and then searched in their mapped objects) and the WAL truncated as they go:
// the server's RSS, its growing memory and its WAL bytes sampled every second. Inserts beyond
// the limit must be refused (RESOURCE_EXHAUSTED), never an OOM, the anonymous RSS must stay
// under the limit, and the WAL must not grow with the load.
void Soak(const std::string& dir, const Flags& f) {
  const uint64_t limit = static_cast<uint64_t>(f.soak_limit_mib) << 20;
  kf::testing::ServerProcess server(
      {.data_dir = dir + "/data",
       .extra_args = {"--memory-limit", std::to_string(limit), "--segment-seal-rows",
                      std::to_string(f.seal_rows), "--checkpoint-interval", "1", "--wal-retention",
                      "0", "--wal-segment-bytes", std::to_string(4 << 20)}});
  if (!server.Start()) Die("server did not start:\n" + server.Output());
  // The kernel enforcing the same limit on everything the process holds, page cache included,
  // as a container's would: the server must live on within it.
  std::unique_ptr<kf::bench::MemoryCgroup> cgroup;
  if (f.soak_cgroup) {
    auto created =
        kf::bench::MemoryCgroup::Create(absl::StrCat("kingfisher-soak-", ::getpid()), limit);
    absl::Status added = created.ok() ? (*created)->Add(server.pid()) : created.status();
    if (added.ok()) {
      cgroup = *std::move(created);
    } else {
      std::printf("soak: not in a memory cgroup (%s)\n", added.ToString().c_str());
    }
  }
  const auto dim = static_cast<uint32_t>(f.dim);
  auto client = kingfisher::Client::Connect({.endpoint = server.address()});
  if (!client.ok()) Die("connect: " + client.status().ToString());
  auto info = (*client)->CreateCollection({.name = "soak", .dim = dim, .shards = 1});
  if (!info.ok()) Die("create: " + info.status().ToString());
  auto producer = (*client)->CreateProducer();
  if (!producer.ok()) Die("producer: " + producer.status().ToString());
  std::printf(
      "soak: %d rows/s of %d-d vectors for %d s, memory_limit %d MiB "
      "(t, rows acked, refused, RSS MiB, of it anonymous MiB, growing MiB, WAL MiB):\n",
      f.soak_rate, f.dim, f.soak_seconds, f.soak_limit_mib);
  std::mt19937 rng(11);
  std::normal_distribution<float> noise(0, 1);
  constexpr int kBatch = 100;
  std::vector<float> vectors(static_cast<size_t>(kBatch) * dim);
  for (float& x : vectors) x = noise(rng);
  std::atomic<uint64_t> acked{0}, refused{0}, other{0};
  absl::Mutex first_error_mu;
  std::string first_error;
  // The client retries RESOURCE_EXHAUSTED until its deadline, then reports DEADLINE_EXCEEDED
  // naming the last error.
  auto Record = [&](const absl::Status& s, uint64_t rows) {
    const std::string text = s.ToString();
    if (s.ok()) {
      acked.fetch_add(rows);
    } else if (absl::IsResourceExhausted(s) ||
               text.find("RESOURCE_EXHAUSTED") != std::string::npos ||
               text.find("RATE_LIMITED") != std::string::npos) {
      refused.fetch_add(rows);
    } else {
      other.fetch_add(rows);
      absl::MutexLock lock(&first_error_mu);
      if (first_error.empty()) first_error = text;
    }
  };
  std::atomic<int> in_flight{0};
  uint64_t max_rss = 0, max_anonymous = 0, max_wal = 0, max_growing = 0;
  int64_t next_pk = 0;
  const auto start = Clock::now();
  auto next_sample = start;
  for (int sent = 0;; sent += kBatch) {
    const double elapsed = Seconds(Clock::now() - start);
    if (elapsed >= f.soak_seconds) break;
    // Paced: batch i goes at i * kBatch / rate seconds.
    const double due = static_cast<double>(sent) / f.soak_rate;
    if (due > elapsed) std::this_thread::sleep_for(std::chrono::duration<double>(due - elapsed));
    if (in_flight.load() < 64) {
      std::vector<int64_t> pks(kBatch);
      for (int64_t& pk : pks) pk = next_pk++;
      auto msgs = kingfisher::InsertMessages(*info, pks, vectors);
      if (!msgs.ok() || msgs->size() != 1) Die("insert messages");  // one shard: one message
      for (auto& m : *msgs) {
        in_flight.fetch_add(1);
        const uint64_t rows = kBatch;
        (*producer)->AppendAsync(std::move(m),
                                 [&, rows](absl::StatusOr<kingfisher::AppendResult> r) {
                                   Record(r.status(), rows);
                                   in_flight.fetch_sub(1);
                                 });
      }
    }
    if (Clock::now() >= next_sample) {
      next_sample += std::chrono::seconds(1);
      const Rss rss = RssOf(server.pid());
      const auto wal = static_cast<uint64_t>(
          std::max(0.0, kf::testing::MetricSum(server.http_port(), "kf_wal_size_bytes")));
      const auto growing = static_cast<uint64_t>(
          std::max(0.0, kf::testing::MetricSum(server.http_port(), "kf_growing_memory_bytes")));
      max_rss = std::max(max_rss, rss.all);
      max_anonymous = std::max(max_anonymous, rss.anonymous);
      max_wal = std::max(max_wal, wal);
      max_growing = std::max(max_growing, growing);
      const int t = static_cast<int>(elapsed);
      if (t % 60 == 0 || t + 1 >= f.soak_seconds) {
        std::printf("  %4d s %10lu %10lu %8.1f %8.1f %8.1f %8.1f\n", t, acked.load(),
                    refused.load(), static_cast<double>(rss.all) / (1 << 20),
                    static_cast<double>(rss.anonymous) / (1 << 20),
                    static_cast<double>(growing) / (1 << 20), static_cast<double>(wal) / (1 << 20));
        std::fflush(stdout);
      }
    }
  }
  while (in_flight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (other.load() > 0) {  // reported, not fatal: the server must still be stopped
    absl::MutexLock lock(&first_error_mu);
    std::printf("soak: %lu rows failed other than RESOURCE_EXHAUSTED, e.g. %s\n", other.load(),
                first_error.c_str());
  }
  std::printf(
      "soak: %lu rows acked, %lu refused RESOURCE_EXHAUSTED; max anonymous RSS %.1f MiB against "
      "the memory_limit %d MiB (max RSS with mapped segment objects %.1f MiB, growing data at "
      "most %.1f MiB); WAL max %.1f MiB (%.1f MiB of rows acked)\n",
      acked.load(), refused.load(), static_cast<double>(max_anonymous) / (1 << 20),
      f.soak_limit_mib, static_cast<double>(max_rss) / (1 << 20),
      static_cast<double>(max_growing) / (1 << 20), static_cast<double>(max_wal) / (1 << 20),
      static_cast<double>(acked.load()) * f.dim * sizeof(float) / (1 << 20));
  if (cgroup != nullptr) {
    std::printf(
        "soak: in a memory cgroup limited to %d MiB (%s): peak charge %.1f MiB (RSS, page cache "
        "and kernel memory of the process), %llu OOM kills\n",
        f.soak_limit_mib, cgroup->path().c_str(),
        static_cast<double>(cgroup->PeakBytes()) / (1 << 20),
        static_cast<unsigned long long>(cgroup->OomKills()));
  }
  server.Stop();
}

uint64_t DirBytes(const std::string& dir) {
  uint64_t n = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir, ec)) {
    if (e.is_regular_file(ec)) n += e.file_size(ec);
  }
  return n;
}

struct Restart {
  double healthy_s = 0;
  double first_search_s = 0;
  uint64_t wal_bytes = 0;
  uint64_t object_bytes = 0;
  double loaded_segments = 0;
};

// Loads `rows` rows into a fresh server run with `args`, kills it once a checkpoint covers the
// load (when `checkpoints`), restarts it and times the restart.
Restart Run(const std::string& dir, const Flags& f, int rows, bool checkpoints) {
  std::vector<std::string> args = {"--wal-segment-bytes", std::to_string(4 << 20)};
  if (checkpoints) {
    args.insert(args.end(), {"--segment-seal-rows", std::to_string(f.seal_rows),
                             "--checkpoint-interval", "1", "--wal-retention", "0"});
  } else {
    args.insert(args.end(), {"--segment-seal-rows", "0", "--checkpoint-interval", "3600"});
  }
  kf::testing::ServerProcess server({.data_dir = dir + "/data", .extra_args = args});
  if (!server.Start()) Die("server did not start:\n" + server.Output());
  const auto dim = static_cast<uint32_t>(f.dim);
  kingfisher::SearchOptions strong;
  strong.consistency = kingfisher::Consistency::kStrong;
  strong.topk = 1;
  const std::vector<float> query(dim, 0.5f);
  {
    auto client = kingfisher::Client::Connect({.endpoint = server.address()});
    if (!client.ok()) Die("connect: " + client.status().ToString());
    auto info = (*client)->CreateCollection({.name = "bench", .dim = dim, .shards = 1});
    if (!info.ok()) Die("create: " + info.status().ToString());
    // The first search starts the pchannel's follower, which seals and checkpoints.
    strong.deadline = kingfisher::Clock::now() + std::chrono::seconds(60);
    if (auto r = (*client)->Search("bench", query, strong); !r.ok()) {
      Die("search: " + r.status().ToString());
    }
    auto producer = (*client)->CreateProducer();
    if (!producer.ok()) Die("producer: " + producer.status().ToString());
    std::mt19937 rng(7);
    std::normal_distribution<float> noise(0, 1);
    std::vector<float> vectors(static_cast<size_t>(1000) * dim);
    // Rows [begin, end), 1000 per message, all acknowledged.
    const auto load = [&](int begin, int end) {
      absl::BlockingCounter acked((end - begin + 999) / 1000);
      std::atomic<int> failed{0};
      for (int from = begin; from < end; from += 1000) {
        const int to = std::min(end, from + 1000);
        std::vector<int64_t> pks;
        for (int i = from; i < to; ++i) pks.push_back(i);
        for (float& x : vectors) x = noise(rng);
        auto msgs = kingfisher::InsertMessages(
            *info, pks, std::vector<float>(vectors.begin(), vectors.begin() + pks.size() * dim));
        if (!msgs.ok() || msgs->size() != 1) Die("insert messages");
        (*producer)->AppendAsync(std::move(msgs->front()),
                                 [&](absl::StatusOr<kingfisher::AppendResult> r) {
                                   if (!r.ok()) failed.fetch_add(1);
                                   acked.DecrementCount();
                                 });
      }
      acked.Wait();
      if (failed.load() > 0) Die(std::to_string(failed.load()) + " inserts failed");
    };
    load(0, rows);
    if (checkpoints) {
      // The same tail after either history: everything so far flushed, then --tail-rows more
      // in the growing segment, which a restart replays from the log.
      auto flushed = (*client)->Flush("bench");
      if (!flushed.ok()) Die("flush: " + flushed.status().ToString());
    }
    load(rows, rows + f.tail_rows);
    strong.deadline = kingfisher::Clock::now() + std::chrono::seconds(60);
    if (auto r = (*client)->Search("bench", query, strong); !r.ok()) {
      Die("search: " + r.status().ToString());
    }
  }
  if (checkpoints) {
    // A checkpoint after the load: its lag below 2 s, with every sealed segment flushed.
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    const std::string unflushed = "kf_sealed_segments{collection_id=\"1\",state=\"unflushed\"}";
    for (;;) {
      const double lag = kf::testing::MetricSum(server.http_port(), "kf_checkpoint_lag_seconds");
      if (lag >= 0 && lag < 2 && kf::testing::MetricSum(server.http_port(), unflushed) <= 0) break;
      if (Clock::now() > deadline) Die("no checkpoint covered the load in 120 s");
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  server.Kill();
  Restart out;
  out.wal_bytes = DirBytes(dir + "/data/wal");
  out.object_bytes = DirBytes(dir + "/data/objects");
  // The same restart several times (each one recovers the same checkpoint and tail): process
  // start alone varies by tens of ms from one launch to the next.
  std::vector<double> healthy, first_search;
  for (int i = 0; i < f.restarts; ++i) {
    if (i > 0) server.Kill();
    const auto start = Clock::now();
    server.Launch();
    if (!server.WaitHealthy(absl::Seconds(600))) Die("restart failed:\n" + server.Output());
    healthy.push_back(Seconds(Clock::now() - start));
    auto client = kingfisher::Client::Connect({.endpoint = server.address()});
    if (!client.ok()) Die("connect: " + client.status().ToString());
    strong.deadline = kingfisher::Clock::now() + std::chrono::seconds(600);
    auto found = (*client)->Search("bench", query, strong);
    if (!found.ok()) Die("search after restart: " + found.status().ToString());
    first_search.push_back(Seconds(Clock::now() - start));
    out.loaded_segments = kf::testing::MetricSum(server.http_port(), "kf_recovered_segments");
  }
  out.healthy_s = kf::bench::Summarize(healthy).p50;
  out.first_search_s = kf::bench::Summarize(first_search).p50;
  server.Stop();
  return out;
}

void Print(const char* what, int rows, const Restart& r) {
  std::printf(
      "  %-34s %8d rows: healthy %6.3f s, first search %6.3f s; WAL %7.1f MiB, objects %7.1f "
      "MiB, %3.0f segments loaded\n",
      what, rows, r.healthy_s, r.first_search_s, static_cast<double>(r.wal_bytes) / (1 << 20),
      static_cast<double>(r.object_bytes) / (1 << 20), std::max(0.0, r.loaded_segments));
}

// Flushing a sealed segment of `rows` rows into `store`: encode + PUT, against a raw PUT of as
// many bytes.
void FlushVersusPut(kf::object::ObjectStore& store, const char* name, const Flags& f) {
  const auto dim = static_cast<uint32_t>(f.dim);
  kf::search::GrowingSegment segment({.dim = dim, .chunk_rows = 8192});
  std::mt19937 rng(7);
  std::normal_distribution<float> noise(0, 1);
  std::vector<int64_t> pks(static_cast<size_t>(f.seal_rows));
  std::vector<float> vectors(pks.size() * dim);
  for (size_t i = 0; i < pks.size(); ++i) pks[i] = static_cast<int64_t>(i);
  for (float& x : vectors) x = noise(rng);
  segment.Insert(pks, vectors, 1);
  segment.Seal();
  std::vector<double> flush, put;
  std::string bytes;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    auto encoded = kf::search::EncodeSealedSegment({.collection_id = 1,
                                                    .segment_id = i + 1,
                                                    .vchannel = "kf-dml_0_1v0",
                                                    .dim = dim,
                                                    .chunk_rows = 8192},
                                                   segment.Snapshot());
    if (!encoded.ok()) Die("encode: " + encoded.status().ToString());
    if (auto s = store.Put(absl::StrCat("seg/", i), *encoded, {}, absl::InfiniteFuture());
        !s.ok()) {
      Die("put: " + s.status().ToString());
    }
    flush.push_back(Seconds(Clock::now() - t0));
    bytes = *std::move(encoded);
    const auto t1 = Clock::now();
    if (auto s = store.Put(absl::StrCat("raw/", i), bytes, {}, absl::InfiniteFuture()); !s.ok()) {
      Die("put: " + s.status().ToString());
    }
    put.push_back(Seconds(Clock::now() - t1));
  }
  const double mib = static_cast<double>(bytes.size()) / (1 << 20);
  const auto fq = kf::bench::Summarize(flush), pq = kf::bench::Summarize(put);
  std::printf(
      "flush of a sealed segment (%d rows, %.1f MiB) to %s: p50 %.1f ms (%.0f MiB/s); baseline "
      "raw PUT of the same bytes p50 %.1f ms (%.0f MiB/s); ratio %.2f\n",
      f.seal_rows, mib, name, fq.p50 * 1e3, mib / fq.p50, pq.p50 * 1e3, mib / pq.p50,
      pq.p50 / fq.p50);
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  kf::bench::FlagSet flags(argv[0]);
  flags.Add("--rows", &f.rows, "N", "history H (the long run loads 10 x H)");
  flags.Add("--dim", &f.dim, "D", "vector dimension");
  flags.Add("--seal-rows", &f.seal_rows, "N", "rows per sealed segment");
  flags.Add("--restarts", &f.restarts, "N", "restarts per history (medians printed; 0: none)");
  flags.Add("--tail-rows", &f.tail_rows, "N", "rows after the last flush (the replayed tail)");
  flags.Add("--soak-seconds", &f.soak_seconds, "S", "length of the sustained-load soak (0: none)");
  flags.Add("--soak-rate", &f.soak_rate, "N", "rows per second of the soak");
  flags.Add("--soak-limit-mib", &f.soak_limit_mib, "M", "the soak server's memory_limit");
  flags.Add("--soak-cgroup", &f.soak_cgroup, "0|1",
            "1: the soak server also in a memory cgroup of that limit, when this machine lets the "
            "bench create one");
  flags.AddDirs(&f.dirs, "the servers' data dirs");
  flags.Parse(argc, argv);
  if (f.rows < 1000 || f.dim < 1 || f.seal_rows < 8192 || f.restarts < 0 || f.tail_rows < 0 ||
      f.soak_seconds < 0 || f.soak_rate < 100 || f.soak_limit_mib < 16 ||
      (f.soak_cgroup != 0 && f.soak_cgroup != 1)) {
    flags.Fail(
        "--rows must be >= 1000, --dim positive, --seal-rows >= 8192, --restarts >= 0, --tail-rows "
        ">= 0, "
        "--soak-seconds >= 0, --soak-rate >= 100, --soak-limit-mib >= 16, --soak-cgroup 0 or 1");
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  const std::string root = kf::bench::StartRun("recovery_bench", f.dirs);
  std::printf("recovery_bench: %d-d rows, 1 shard, segments of %d rows, data %s\n", f.dim,
              f.seal_rows, root.c_str());
  {
    auto local =
        kf::object::LocalObjectStore::Open(kf::fs::DefaultFileSystem(), root + "/flush/objects");
    if (!local.ok()) Die("object store: " + local.status().ToString());
    FlushVersusPut(**local, "the local store", f);
    if (!kf::object::testing::RgwProcess::BinariesPresent()) Die("Ceph RGW binaries missing");
    kf::object::testing::RgwProcess rgw(root);
    if (absl::Status s = rgw.Start(); !s.ok()) Die("rgw: " + s.ToString());
    auto s3 = kf::object::S3ObjectStore::Create(rgw.s3_options());
    if (!s3.ok()) Die("s3: " + s3.status().ToString());
    FlushVersusPut(**s3, "Ceph RGW (S3)", f);
  }
  int run = 0;
  std::vector<double> with_s, without_s;  // first search, 1x then 10x
  for (const int rows : {f.rows, 10 * f.rows}) {
    if (f.restarts == 0) break;
    if (run == 0) {
      std::printf(
          "restart after kill -9, median of %d (start to healthy, to the first strong search "
          "answered):\n",
          f.restarts);
    }
    const Restart with = Run(absl::StrCat(root, "/r", run++), f, rows, true);
    Print("recovery storage", rows, with);
    const Restart without = Run(absl::StrCat(root, "/r", run++), f, rows, false);
    Print("baseline: whole-log replay", rows, without);
    with_s.push_back(with.first_search_s);
    without_s.push_back(without.first_search_s);
  }
  if (with_s.size() == 2) {
    std::printf(
        "first search after 10x the history: %.2fx the time after 1x with recovery storage (bar "
        "1.25x); baseline whole-log replay %.2fx\n",
        with_s[1] / with_s[0], without_s[1] / without_s[0]);
  }
  if (f.soak_seconds > 0) Soak(root + "/soak", f);
  return 0;
}
