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
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench_flags.h"
#include "bench_util.h"
#include "kingfisher/client.h"
#include "local_cluster.h"
#include "storage/meta/etcd_meta_store.h"

namespace {

using kf::bench::Clock;
using kf::bench::Die;

struct Flags {
  kf::bench::BenchDirs dirs;
  int creates = 50;
  int shards = 16;
  int threads = 8;
  int ops = 400;
  int pchannels = 4;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  kf::bench::FlagSet flags(argv[0]);
  flags.AddDirs(&f.dirs, "etcd, nodes");
  flags.Add("--creates", &f.creates, "N", "timed creates (and drops) of --shards shards");
  flags.Add("--shards", &f.shards, "N", "shards of the timed creates");
  flags.Add("--threads", &f.threads, "N", "threads of the throughput run");
  flags.Add("--ops", &f.ops, "N", "DDLs of the throughput run, 0 = skip");
  flags.Add("--pchannels", &f.pchannels, "N", "pchannels of the cluster");
  flags.Parse(argc, argv);
  if (f.creates < 1) flags.Fail("--creates must be at least 1");
  if (f.shards < 1 || f.shards > 64) flags.Fail("--shards must be 1 to 64");
  if (f.threads < 1) flags.Fail("--threads must be at least 1");
  if (f.ops < 0) flags.Fail("--ops must not be negative");
  if (f.pchannels < 1) flags.Fail("--pchannels must be at least 1");
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
    kingfisher::Message m{.type = kingfisher::MessageType::kInsert,
                          .vchannel = vchannel,
                          .payload = std::string(256, 'x')};
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
  const std::string root = kf::bench::StartRun("ddl_bench", f.dirs);
  std::printf("ddl_bench: data %s, server %s/kingfisher, %d pchannels, 3 nodes\n", root.c_str(),
              f.dirs.bin_dir.c_str(), f.pchannels);

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
