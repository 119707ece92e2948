// cluster_bench: the issue-4 figures — appends through the distributed path against the
// in-process fast path in the same run, and failover after kill -9 of a pchannel's owner.
//
//   1. fast path: --pchannels WALs on the local backend in this process (real fdatasync under
//      --dir), appended through the in-process client (ConnectInProcess: no gRPC);
//   2. distributed: a real etcd, `kingfisher run coord` and 3 `kingfisher run node` (one
//      shared data dir under --dir), the client bootstrapped from the coordinator, over gRPC;
//   both with the same workload (append_load.h): --producers producers over the pchannels,
//   --messages appends of --payload-bytes, once one at a time (AppendSync) and once with
//   --window appends in flight per producer; throughput and call-to-ack latency side by side;
//   3. failover (failover.h): --trials kill -9 of the node owning a pchannel under a producer,
//      time to the first acknowledgement, with --lease-ttl (coordinator and nodes) printed as
//      the floor: the coordinator moves a pchannel only once the dead node's lease expired,
//      2/3 TTL to 1 TTL after the kill (nodes renew every TTL/3).
// A raw write + fdatasync of --payload-bytes on the same filesystem, measured before and after
// (never next to the load), is printed next to the latencies.
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "append_load.h"
#include "bench_flags.h"
#include "bench_util.h"
#include "failover.h"
#include "in_process_wals.h"
#include "local_cluster.h"

namespace {

using kf::bench::Die;
using kf::bench::LoadResult;
namespace stdfs = std::filesystem;

struct Flags {
  kf::bench::BenchDirs dirs;
  uint64_t messages = 20000;
  size_t payload_bytes = 1024;
  int producers = 8;
  int window = 32;
  int pchannels = 3;
  int trials = 10;
  double lease_ttl = 2;
};

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  kf::bench::FlagSet flags(argv[0]);
  flags.AddDirs(&f.dirs, "WALs, etcd, nodes");
  flags.Add("--messages", &f.messages, "N", "appends per mode and path");
  flags.Add("--payload-bytes", &f.payload_bytes, "B", "payload size");
  flags.Add("--producers", &f.producers, "N", "concurrent producers");
  flags.Add("--window", &f.window, "N", "pipelined mode: appends in flight per producer, 0 = skip");
  flags.Add("--pchannels", &f.pchannels, "N", "pchannels of both paths");
  flags.Add("--trials", &f.trials, "N", "failover trials, 0 = skip");
  flags.Add("--lease-ttl", &f.lease_ttl, "S", "lease TTL of coordinator and nodes, seconds");
  flags.Parse(argc, argv);
  if (f.messages < 1) flags.Fail("--messages must be at least 1");
  if (f.producers < 1) flags.Fail("--producers must be at least 1");
  if (f.window < 0) flags.Fail("--window must not be negative");
  if (f.pchannels < 1) flags.Fail("--pchannels must be at least 1");
  if (f.trials < 0) flags.Fail("--trials must not be negative");
  if (f.lease_ttl <= 0) flags.Fail("--lease-ttl must be positive");
  return f;
}

// Both paths' results of one mode.
struct ModeResult {
  std::string name;
  LoadResult fast, dist;
};

std::vector<kf::bench::LoadOptions> Modes(const Flags& f, const std::vector<std::string>& vcs) {
  std::vector<kf::bench::LoadOptions> modes;
  modes.push_back({.label = "one at a time",
                   .producers = f.producers,
                   .vchannels = vcs,
                   .payload_bytes = f.payload_bytes,
                   .messages = f.messages,
                   .window = 1});
  if (f.window > 0) {
    kf::bench::LoadOptions o = modes.front();
    o.label = "pipelined, " + std::to_string(f.window) + " in flight per producer";
    o.window = f.window;
    modes.push_back(o);
  }
  return modes;
}

std::vector<std::string> BenchVChannels(const std::vector<std::string>& pchannels) {
  std::vector<std::string> out;
  for (const auto& p : pchannels) out.push_back(p + "_bench");
  return out;
}

void PrintRow(const char* what, double fast, double dist, const char* fmt) {
  char a[32], b[32];
  std::snprintf(a, sizeof(a), fmt, fast);
  std::snprintf(b, sizeof(b), fmt, dist);
  std::printf("  %-22s %12s %12s %10.2f\n", what, a, b, fast > 0 ? dist / fast : 0.0);
}

void PrintMode(const ModeResult& m, size_t payload_bytes) {
  std::printf("%s (%" PRIu64 " appends)\n  %-22s %12s %12s %10s\n", m.name.c_str(), m.fast.messages,
              "", "fast path", "distributed", "dist/fast");
  auto rate = [](const LoadResult& r) { return static_cast<double>(r.messages) / r.seconds; };
  const double mb = static_cast<double>(payload_bytes) / 1e6;
  PrintRow("throughput msg/s", rate(m.fast), rate(m.dist), "%.0f");
  PrintRow("throughput MB/s", rate(m.fast) * mb, rate(m.dist) * mb, "%.2f");
  for (const auto& [label, p] :
       {std::pair{"latency p50 ms", 0.5}, std::pair{"latency p99 ms", 0.99},
        std::pair{"latency p999 ms", 0.999}}) {
    PrintRow(label, kf::bench::Percentile(m.fast.latencies, p) * 1e3,
             kf::bench::Percentile(m.dist.latencies, p) * 1e3, "%.3f");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  const std::string root = kf::bench::StartRun("cluster_bench", f.dirs);
  std::printf(
      "cluster_bench: data %s, server %s/kingfisher\n"
      "workload: %d producers over %d pchannels, %zu B payloads, %" PRIu64
      " appends per mode and path\n",
      root.c_str(), f.dirs.bin_dir.c_str(), f.producers, f.pchannels, f.payload_bytes, f.messages);

  // Before and after the load, never next to it (see tailing_bench): pooled.
  const std::string raw = root + "/fdatasync.raw";
  std::vector<double> sync = kf::bench::RawWriteSync(raw, f.payload_bytes, 1.0, 2000);

  kf::bench::LocalClusterOptions cluster_options{
      .dir = root + "/cluster", .pchannels = f.pchannels, .lease_ttl = f.lease_ttl};
  std::vector<std::string> pchannels;
  for (int i = 0; i < f.pchannels; ++i) {
    pchannels.push_back(cluster_options.cluster + "-dml_" + std::to_string(i));
  }
  const auto modes = Modes(f, BenchVChannels(pchannels));
  std::vector<ModeResult> results(modes.size());

  std::fprintf(stderr, "fast path: opening %d local WALs in this process\n", f.pchannels);
  {
    kf::bench::InProcessWals fast(root + "/fast", pchannels);
    for (size_t i = 0; i < modes.size(); ++i) {
      kf::bench::LoadOptions o = modes[i];
      results[i].name = o.label;
      o.label = "fast path, " + o.label;
      results[i].fast = kf::bench::RunAppendLoad(fast.client(), o);
    }
  }

  kf::bench::FailoverResult failover;
  std::fprintf(stderr, "distributed: starting etcd, coord and 3 nodes\n");
  {
    kf::bench::LocalCluster cluster(cluster_options);
    if (!cluster.WaitSteady(absl::Seconds(60))) Die("the cluster did not become steady in 60 s");
    for (size_t i = 0; i < modes.size(); ++i) {
      kf::bench::LoadOptions o = modes[i];
      o.label = "distributed, " + o.label;
      results[i].dist = kf::bench::RunAppendLoad(cluster.client(), o);
    }
    if (f.trials > 0) {
      std::fprintf(stderr, "failover: %d trials, lease TTL %g s\n", f.trials, f.lease_ttl);
      failover = kf::bench::RunFailoverTrials(
          cluster, {.trials = f.trials, .payload_bytes = f.payload_bytes});
    }
  }

  std::vector<double> after = kf::bench::RawWriteSync(raw, f.payload_bytes, 1.0, 2000);
  sync.insert(sync.end(), after.begin(), after.end());

  std::printf("\n");
  for (const auto& m : results) PrintMode(m, f.payload_bytes);
  std::printf(
      "baseline: %zu B write+fdatasync, same filesystem: p50 %.3f ms p99 %.3f ms p999 "
      "%.3f ms (%zu ops, before and after the load)\n",
      f.payload_bytes, kf::bench::Percentile(sync, 0.5) * 1e3,
      kf::bench::Percentile(sync, 0.99) * 1e3, kf::bench::Percentile(sync, 0.999) * 1e3,
      sync.size());
  if (f.trials > 0) {
    const auto ack = kf::bench::Summarize(failover.first_ack);
    const auto moved = kf::bench::Summarize(failover.reassigned);
    const double ttl_ms = f.lease_ttl * 1e3;
    std::printf(
        "failover: kill -9 of a pchannel's owner under a producer, %zu trials, lease TTL %g s "
        "(coordinator and nodes)\n"
        "  floor: nodes renew their lease every TTL/3, so a dead node's lease runs out %.0f-%.0f "
        "ms after the kill; nothing moves before\n"
        "  kill -> first acknowledged append  ms: p50 %.0f p90 %.0f max %.0f\n"
        "  kill -> ASSIGNED on another node   ms: p50 %.0f p90 %.0f max %.0f (first seen by "
        "polling the coordinator every 10 ms, at most the ack)\n"
        "  per trial (first ack, ms):",
        ack.count, f.lease_ttl, ttl_ms * 2 / 3, ttl_ms, ack.p50 * 1e3, ack.p90 * 1e3, ack.max * 1e3,
        moved.p50 * 1e3, moved.p90 * 1e3, moved.max * 1e3);
    for (double s : failover.first_ack) std::printf(" %.0f", s * 1e3);
    std::printf("\n");
    for (const auto& e : failover.errors) std::printf("  WARNING: append failed: %s\n", e.c_str());
  }
  std::error_code ec;
  stdfs::remove_all(root, ec);
  return 0;
}
