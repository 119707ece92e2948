// objectstore_wal_bench: the objectstore WAL backend (issue 6 part 2) on a real Ceph RGW (and on
// the local object store), next to the baselines measured in the same run on the same store:
//   PUT     one sequential PUT of a block the size one lone append makes (the floor of an ack)
//   PUT bw  parallel PUTs of 4 MiB objects (8 at once): the store's raw bandwidth
// and the backend's figures:
//   ack 1   sequential appends, one in flight: ack latency p50/p99   (bar: p50 <= PUT p50 + 10 ms)
//   ack 64  64 appends in flight: ack latency p50/p99 and appends/s
//   bw      64 KiB appends, 256 in flight: MiB/s, as a ratio of the raw PUT bandwidth
// The metadata store is the embedded one (the generation check before each ack is a local read;
// with etcd add one etcd read per acknowledged group).
// Usage: objectstore_wal_bench [--dir DIR] [--entry BYTES] [--ops N] [--seconds S] [--skip-s3]
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "bench_flags.h"
#include "bench_util.h"
#include "storage/fs/file_system.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/object/local_object_store.h"
#include "storage/object/s3_object_store.h"
#include "storage/object/testing/rgw_process.h"
#include "wal/backends/objectstore/block_format.h"
#include "wal/backends/objectstore/object_opener.h"

namespace {

using kf::bench::Clock;
using kf::bench::Die;
using kf::bench::Seconds;
using kf::bench::Summarize;
namespace object = kf::object;
namespace os = kf::wal::objectstore;

absl::Time Deadline() { return absl::Now() + absl::Seconds(120); }

void PrintLatency(const std::string& what, const std::vector<double>& lat) {
  const auto q = Summarize(lat);
  std::printf("%-26s p50 %8.2f ms  p99 %8.2f ms  (n=%zu)\n", what.c_str(), q.p50 * 1e3, q.p99 * 1e3,
              q.count);
}

// Sequential PUTs of `size` bytes: the latency floor of one block upload.
std::vector<double> PutLatency(object::ObjectStore* store, size_t size, int ops) {
  const std::string data(size, 'p');
  std::vector<double> lat;
  for (int i = 0; i < ops; ++i) {
    const auto t0 = Clock::now();
    auto r = store->Put("bench/put/" + std::to_string(i), data, {.if_absent = true}, Deadline());
    lat.push_back(Seconds(Clock::now() - t0));
    if (!r.ok()) Die("put: " + r.status().ToString());
  }
  return lat;
}

// 8 threads PUT 4 MiB objects for `seconds`: MiB/s.
double PutBandwidth(object::ObjectStore* store, double seconds) {
  const std::string data(4 << 20, 'b');
  std::atomic<uint64_t> bytes{0};
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  std::vector<std::thread> threads;
  const auto t0 = Clock::now();
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; Clock::now() < end; ++i) {
        auto r = store->Put("bench/bw/" + std::to_string(t) + "/" + std::to_string(i), data, {},
                            Deadline());
        if (!r.ok()) Die("put: " + r.status().ToString());
        bytes += data.size();
      }
    });
  }
  for (auto& t : threads) t.join();
  return static_cast<double>(bytes) / (1 << 20) / Seconds(Clock::now() - t0);
}

// Appends `entry`-byte entries with `in_flight` outstanding for `ops` appends: per-append ack
// latencies; `*rate` gets appends per second.
std::vector<double> AckLatency(kf::wal::WalBackend* b, size_t entry, int in_flight, int ops,
                               double* rate) {
  const std::string data(entry, 'e');
  absl::Mutex mu;
  int outstanding = 0;
  std::vector<double> lat;
  lat.reserve(static_cast<size_t>(ops));
  const auto t0 = Clock::now();
  for (int i = 0; i < ops; ++i) {
    {
      absl::MutexLock l(&mu);
      auto room = [&] { return outstanding < in_flight; };
      mu.Await(absl::Condition(&room));
      ++outstanding;
    }
    const auto start = Clock::now();
    auto id = b->Append(data, [&, start](absl::Status s) {
      if (!s.ok()) Die("append: " + s.ToString());
      absl::MutexLock l(&mu);
      lat.push_back(Seconds(Clock::now() - start));
      --outstanding;
    });
    if (!id.ok()) Die("append: " + id.status().ToString());
  }
  absl::MutexLock l(&mu);
  auto drained = [&] { return outstanding == 0; };
  mu.Await(absl::Condition(&drained));
  *rate = ops / Seconds(Clock::now() - t0);
  return lat;
}

void Run(const std::string& name, object::ObjectStore* store, kf::meta::MetaStore* meta,
         size_t entry, int ops, double seconds) {
  std::printf("-- %s\n", name.c_str());
  const size_t block = os::kMinDataBlockSize + entry;
  const auto put = PutLatency(store, block, ops);
  PrintLatency(name + " PUT " + std::to_string(block) + " B", put);
  const double raw_bw = PutBandwidth(store, seconds);
  std::printf("%-26s %8.1f MiB/s\n", (name + " PUT bw (8 x 4 MiB)").c_str(), raw_bw);

  os::ObjectOpenerOptions options;
  options.store = store;
  options.meta = meta;
  options.root = "bench/wal";
  auto opener = os::NewObjectOpener(options);
  std::string pchannel = name + "-wal";
  std::replace(pchannel.begin(), pchannel.end(), '/', '-');
  auto b = opener->Open({.pchannel = pchannel, .term = kf::Term(1)});
  if (!b.ok()) Die("open: " + b.status().ToString());
  double rate = 0;
  const auto ack1 = AckLatency(b->get(), entry, 1, ops, &rate);
  PrintLatency(name + " ack, 1 in flight", ack1);
  const double bar = Summarize(put).p50 + 0.010;
  std::printf("%-26s p50 %.2f ms vs PUT p50 + 10 ms = %.2f ms: %s\n", "  bar",
              Summarize(ack1).p50 * 1e3, bar * 1e3, Summarize(ack1).p50 <= bar ? "met" : "MISSED");
  const auto ack64 = AckLatency(b->get(), entry, 64, ops * 20, &rate);
  PrintLatency(name + " ack, 64 in flight", ack64);
  std::printf("%-26s %8.0f appends/s\n", "", rate);
  const size_t big = 64 << 10;
  const int big_ops = static_cast<int>(raw_bw * seconds * 16);  // ~ seconds at raw bandwidth
  AckLatency(b->get(), big, 256, big_ops, &rate);
  const double mibps = rate * big / (1 << 20);
  std::printf("%-26s %8.1f MiB/s  (%.2fx the raw PUT bandwidth)\n",
              (name + " bw, 64 KiB x 256").c_str(), mibps, mibps / raw_bw);
  if (absl::Status s = (*b)->Close(); !s.ok()) Die(s.ToString());
}

}  // namespace

int main(int argc, char** argv) {
  kf::bench::SetProgramName("objectstore_wal_bench");
  std::string dir = ".";
  int entry = 4096;
  int ops = 200;
  double seconds = 5;
  bool skip_s3 = false;
  kf::bench::FlagSet flags(argv[0]);
  flags.Add("--dir", &dir, "DIR", "data (stores, RGW) goes under DIR/objectstore_wal_bench");
  flags.Add("--entry", &entry, "BYTES", "entry size of the latency runs");
  flags.Add("--ops", &ops, "N", "sequential PUTs and appends (x20 for the 64-in-flight run)");
  flags.Add("--seconds", &seconds, "S", "length of each bandwidth run");
  flags.AddSwitch("--skip-s3", &skip_s3, "measure only the local object store");
  flags.Parse(argc, argv);
  if (entry < 1 || ops < 1 || seconds <= 0) flags.Fail("--entry, --ops, --seconds must be > 0");
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::string root = dir + "/objectstore_wal_bench";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  std::printf("objectstore_wal_bench: %d-byte entries, %d ops, dir %s\n", entry, ops, root.c_str());
  auto meta = kf::meta::EmbeddedMetaStore::Open(root + "/meta", {});
  if (!meta.ok()) Die(meta.status().ToString());
  const auto raw = kf::bench::RawWriteSync(root + "/raw", static_cast<size_t>(entry), 10.0,
                                           static_cast<size_t>(ops));
  PrintLatency("raw write+fdatasync", raw);
  {
    auto local = object::LocalObjectStore::Open(kf::fs::DefaultFileSystem(), root + "/local");
    if (!local.ok()) Die(local.status().ToString());
    Run("local", local->get(), meta->get(), static_cast<size_t>(entry), ops, seconds);
  }
  if (skip_s3) return 0;
  if (!object::testing::RgwProcess::BinariesPresent()) Die("Ceph RGW binaries missing");
  object::testing::RgwProcess rgw(root);
  if (absl::Status s = rgw.Start(); !s.ok()) Die(s.ToString());
  auto s3 = object::S3ObjectStore::Create(rgw.s3_options());
  if (!s3.ok()) Die(s3.status().ToString());
  Run("s3/rgw", s3->get(), meta->get(), static_cast<size_t>(entry), ops, seconds);
  return 0;
}
