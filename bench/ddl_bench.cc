// ddl_bench: the issue-5 figures — collection DDL end to end through the coordinator's
// broadcaster, on the distributed service (a real etcd, `kingfisher run coord` and 3
// `kingfisher run node` on loopback, bench/local_cluster.h):
//   1. create-collection latency with --shards shards (client call to return: lock, id, task
//      persisted with the CREATING mark, one append per vchannel, callback committed), one at a
//      time, --creates times; then the drop of each, timed the same way;
//   2. DDL throughput on distinct collections: --threads threads, each creating and dropping
//      its own collections (1 shard) one after another, --ops DDLs in all.
// Baselines measured in the same run against the same processes: one etcd Put (a DDL makes
// several fenced transactions) and one Insert append through the same client (a broadcast
// makes one round of --shards appends in parallel).
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench_util.h"
#include "kingfisher/client.h"
#include "local_cluster.h"
#include "storage/meta/etcd_meta_store.h"

namespace {

using kf::bench::Clock;
using kf::bench::Die;

struct Flags {
  std::string dir;      // parent of the temp dir (default: <build>/bench-data)
  std::string bin_dir;  // where `kingfisher` is (default: this binary's dir)
  int creates = 50;
  int shards = 16;
  int threads = 8;
  int ops = 400;
  int pchannels = 4;
};

[[noreturn]] void Usage(int code, const char* argv0) {
  const Flags d;
  std::fprintf(code == 0 ? stdout : stderr,
               "usage: %s [flags]\n"
               "  --dir DIR        temp data (etcd, nodes) goes under DIR (default "
               "<build>/bench-data)\n"
               "  --bin-dir DIR    where the kingfisher binary is (default: next to this one)\n"
               "  --creates N      timed creates (and drops) of --shards shards (default %d)\n"
               "  --shards N       shards of the timed creates (default %d)\n"
               "  --threads N      threads of the throughput run (default %d)\n"
               "  --ops N          DDLs of the throughput run, 0 = skip (default %d)\n"
               "  --pchannels N    pchannels of the cluster (default %d)\n",
               argv0, d.creates, d.shards, d.threads, d.ops, d.pchannels);
  std::exit(code);
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  const kf::bench::BenchDirs dirs = kf::bench::DefaultDirs(argv[0]);
  f.dir = dirs.dir;
  f.bin_dir = dirs.bin_dir;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") Usage(0, argv[0]);
    if (i + 1 >= argc) Usage(2, argv[0]);
    const char* v = argv[++i];
    if (a == "--dir") {
      f.dir = v;
    } else if (a == "--bin-dir") {
      f.bin_dir = v;
    } else if (a == "--creates") {
      f.creates = std::atoi(v);
    } else if (a == "--shards") {
      f.shards = std::atoi(v);
    } else if (a == "--threads") {
      f.threads = std::atoi(v);
    } else if (a == "--ops") {
      f.ops = std::atoi(v);
    } else if (a == "--pchannels") {
      f.pchannels = std::atoi(v);
    } else {
      Usage(2, argv[0]);
    }
  }
  if (f.creates < 1 || f.shards < 1 || f.shards > 64 || f.threads < 1 || f.ops < 0 ||
      f.pchannels < 1) {
    Usage(2, argv[0]);
  }
  return f;
}

void PrintLatency(const char* what, const std::vector<double>& seconds) {
  const kf::bench::Quantiles q = kf::bench::Summarize(seconds);
  std::printf("  %-34s p50 %8.2f ms  p90 %8.2f ms  p99 %8.2f ms  max %8.2f ms  (%zu)\n", what,
              q.p50 * 1e3, q.p90 * 1e3, q.p99 * 1e3, q.max * 1e3, q.count);
}

template <typename F>
double Timed(F&& f) {
  const auto start = Clock::now();
  f();
  return kf::bench::Seconds(Clock::now() - start);
}

// Create/drop latency of `creates` collections of `shards` shards, one at a time.
void TimeCreateDrop(kingfisher::Client& client, const Flags& f, std::vector<double>* create,
                    std::vector<double>* drop) {
  for (int i = 0; i < f.creates; ++i) {
    const std::string name = absl::StrCat("lat_", i);
    const uint32_t shards = static_cast<uint32_t>(f.shards);
    create->push_back(Timed([&] {
      auto c = client.CreateCollection({.name = name, .dim = 128, .shards = shards});
      if (!c.ok()) Die("create " + name + ": " + c.status().ToString());
    }));
  }
  for (int i = 0; i < f.creates; ++i) {
    const std::string name = absl::StrCat("lat_", i);
    drop->push_back(Timed([&] {
      absl::Status s = client.DropCollection(name);
      if (!s.ok()) Die("drop " + name + ": " + s.ToString());
    }));
  }
}

// DDLs per second with `threads` threads on distinct collections.
double Throughput(kingfisher::Client& client, const Flags& f) {
  const int per_thread = (f.ops + f.threads - 1) / f.threads;
  std::vector<std::thread> threads;
  const double seconds = Timed([&] {
    for (int t = 0; t < f.threads; ++t) {
      threads.emplace_back([&client, t, per_thread] {
        for (int i = 0; i < per_thread; ++i) {
          const std::string name = absl::StrCat("tp_", t, "_", i / 2);
          absl::Status s = i % 2 == 0 ? client.CreateCollection({.name = name, .dim = 8}).status()
                                      : client.DropCollection(name);
          if (!s.ok()) Die("throughput DDL on " + name + ": " + s.ToString());
        }
      });
    }
    for (auto& t : threads) t.join();
  });
  return per_thread * f.threads / seconds;
}

std::vector<double> EtcdPuts(const std::string& endpoint, int n) {
  auto store = kf::meta::EtcdMetaStore::Create({.endpoints = {endpoint}});
  if (!store.ok()) Die("etcd: " + store.status().ToString());
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    out.push_back(Timed([&] {
      auto r = (*store)->Put("bench/put", std::string(256, 'x'), absl::Now() + absl::Seconds(5));
      if (!r.ok()) Die("etcd put: " + r.status().ToString());
    }));
  }
  return out;
}

std::vector<double> Appends(kingfisher::Client& client, const std::string& vchannel, int n) {
  auto producer = client.CreateProducer();
  if (!producer.ok()) Die("producer: " + producer.status().ToString());
  std::vector<double> out;
  for (int i = 0; i < n; ++i) {
    kingfisher::Message m(kf::MessageType::kInsert, std::string(256, 'x'));
    m.set_vchannel(vchannel);
    out.push_back(Timed([&] {
      auto r = (*producer)->AppendSync(std::move(m));
      if (!r.ok()) Die("append: " + r.status().ToString());
    }));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  const std::string root = kf::bench::StartRun("ddl_bench", {f.dir, f.bin_dir});
  std::printf("ddl_bench: data %s, server %s/kingfisher, %d pchannels, 3 nodes\n", root.c_str(),
              f.bin_dir.c_str(), f.pchannels);

  std::fprintf(stderr, "starting etcd, coord and 3 nodes\n");
  std::vector<double> puts, appends, create, drop;
  double ddl_per_second = 0;
  {
    kf::bench::LocalCluster cluster({.dir = root + "/cluster", .pchannels = f.pchannels});
    if (!cluster.WaitSteady(absl::Seconds(60))) Die("the cluster did not become steady in 60 s");
    kingfisher::Client& client = cluster.client();

    std::fprintf(stderr, "baselines: etcd puts, appends\n");
    puts = EtcdPuts(cluster.etcd_endpoint(), 200);
    appends = Appends(client, cluster.PChannels()[0] + "_bench", 200);

    std::fprintf(stderr, "create/drop latency: %d collections of %d shards\n", f.creates, f.shards);
    TimeCreateDrop(client, f, &create, &drop);

    if (f.ops > 0) {
      std::fprintf(stderr, "throughput: %d DDLs on %d threads\n", f.ops, f.threads);
      ddl_per_second = Throughput(client, f);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(root, ec);

  std::printf("\nDDL end to end (client call to return), one at a time:\n");
  PrintLatency(absl::StrCat("create, ", f.shards, " shards").c_str(), create);
  PrintLatency(absl::StrCat("drop, ", f.shards, " shards").c_str(), drop);
  if (f.ops > 0) {
    std::printf("DDL throughput, distinct collections of 1 shard, %d threads: %.0f DDL/s\n",
                f.threads, ddl_per_second);
  }
  std::printf("baselines, same run:\n");
  PrintLatency("etcd put (256 B)", puts);
  PrintLatency("one Insert append (256 B)", appends);
  return 0;
}
