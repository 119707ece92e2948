// meta_store_bench: sequential latency of the two metadata stores, next to the disk baseline
// measured in the same run on the same directory:
//   raw      one small write + fdatasync (what one durable embedded mutation costs at least)
//   embedded Put and CAS Txn (ModRevisionIs + Put) on EmbeddedMetaStore
//   etcd     the same against a real etcd started on loopback with its data in --dir (etcd
//            fsyncs its own WAL, so the raw figure is its floor too)
// Usage: meta_store_bench [--dir DIR] [--ops N] [--value-bytes B]
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_flags.h"
#include "bench_util.h"
#include "storage/meta/embedded_meta_store.h"
#include "storage/meta/etcd_meta_store.h"
#include "storage/meta/testing/etcd_process.h"

namespace {

using kf::bench::Clock;
using kf::bench::Die;
using kf::bench::Seconds;
using kf::bench::Summarize;
namespace meta = kf::meta;

absl::Time Deadline() { return absl::Now() + absl::Seconds(10); }

void Print(const char* what, const std::vector<double>& lat, double raw_p50) {
  const auto q = Summarize(lat);
  std::printf("%-14s p50 %7.3f ms  p99 %7.3f ms", what, q.p50 * 1e3, q.p99 * 1e3);
  if (raw_p50 > 0) std::printf("  (p50 %.2fx raw)", q.p50 / raw_p50);
  std::printf("\n");
}

// Sequential Puts and CAS txns on one store; returns {put latencies, cas latencies}.
std::pair<std::vector<double>, std::vector<double>> Measure(meta::MetaStore* store, int ops,
                                                            const std::string& value) {
  std::vector<double> put, cas;
  for (int i = 0; i < ops; ++i) {
    const auto t0 = Clock::now();
    auto rev = store->Put("/bench/put/" + std::to_string(i % 64), value, Deadline());
    put.push_back(Seconds(Clock::now() - t0));
    if (!rev.ok()) Die("put: " + rev.status().ToString());
  }
  auto rev = store->Put("/bench/cas", value, Deadline());
  if (!rev.ok()) Die("put: " + rev.status().ToString());
  int64_t expected = *rev;
  for (int i = 0; i < ops; ++i) {
    const auto t0 = Clock::now();
    auto r = store->Txn({meta::Compare::ModRevisionIs("/bench/cas", expected)},
                        {meta::Op::Put("/bench/cas", value)}, {}, Deadline());
    cas.push_back(Seconds(Clock::now() - t0));
    if (!r.ok() || !r->succeeded) Die("cas txn failed");
    expected = r->revision;
  }
  return {put, cas};
}

}  // namespace

int main(int argc, char** argv) {
  kf::bench::SetProgramName("meta_store_bench");
  std::string dir = ".";
  int ops = 500;
  size_t value_bytes = 64;
  kf::bench::FlagSet flags(argv[0]);
  flags.Add("--dir", &dir, "DIR",
            "the stores' data (embedded, etcd) goes under DIR/meta_store_bench");
  flags.Add("--ops", &ops, "N", "sequential ops of each kind per store");
  flags.Add("--value-bytes", &value_bytes, "B", "value size");
  flags.Parse(argc, argv);
  const std::string value(value_bytes, 'v');
  const std::string root = dir + "/meta_store_bench";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  std::printf("meta_store_bench: %d sequential ops each, %zu B values, dir %s\n", ops, value_bytes,
              root.c_str());

  // A record is ~value + key + 20 B of framing; the raw baseline writes the same size.
  const auto raw =
      kf::bench::RawWriteSync(root + "/raw", value_bytes + 40, 30.0, static_cast<size_t>(ops));
  const double raw_p50 = Summarize(raw).p50;
  Print("raw fdatasync", raw, 0);

  {
    auto store = meta::EmbeddedMetaStore::Open(root + "/embedded", {});
    if (!store.ok()) Die(store.status().ToString());
    auto [put, cas] = Measure(store->get(), ops, value);
    Print("embedded put", put, raw_p50);
    Print("embedded cas", cas, raw_p50);
  }

  kf::meta::testing::EtcdProcess etcd(root);
  if (absl::Status s = etcd.Start(); !s.ok()) Die(s.ToString());
  auto store = meta::EtcdMetaStore::Create({.endpoints = {etcd.endpoint()}});
  if (!store.ok()) Die(store.status().ToString());
  auto [put, cas] = Measure(store->get(), ops, value);
  Print("etcd put", put, raw_p50);
  Print("etcd cas", cas, raw_p50);
  store->reset();
  etcd.Kill();
  std::filesystem::remove_all(root);
  return 0;
}
