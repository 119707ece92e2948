// object_store_bench: what one object costs on each object store, next to the disk baseline
// measured in the same run on the same directory — the bar of the objectstore WAL backend
// (ack p50 <= PUT p50 + 10 ms) is measured against these figures:
//   raw    one write + fdatasync of the same size (the floor of any durable local write)
//   local  LocalObjectStore (temp file, fdatasync, rename, directory fsync)
//   s3     S3ObjectStore against a real Ceph RGW started on loopback with its data in --dir
// For 4 KiB and 1 MiB objects: sequential PUT and GET latency p50/p99; for 64 MiB: PUT
// bandwidth.
// Usage: object_store_bench [--dir DIR] [--ops N] [--big-ops N] [--skip-s3]
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench_flags.h"
#include "bench_util.h"
#include "storage/fs/file_system.h"
#include "storage/object/local_object_store.h"
#include "storage/object/s3_object_store.h"
#include "storage/object/testing/rgw_process.h"

namespace {

using kf::bench::Clock;
using kf::bench::Die;
using kf::bench::Seconds;
using kf::bench::Summarize;
namespace object = kf::object;

absl::Time Deadline() { return absl::Now() + absl::Seconds(120); }

std::string Bytes(size_t n) {
  std::string s(n, '\0');
  uint64_t x = 0x2545F4914F6CDD1Dull;
  for (char& c : s) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    c = static_cast<char>(x);
  }
  return s;
}

void Print(const std::string& what, const std::vector<double>& lat, double raw_p50) {
  const auto q = Summarize(lat);
  std::printf("%-22s p50 %8.3f ms  p99 %8.3f ms", what.c_str(), q.p50 * 1e3, q.p99 * 1e3);
  if (raw_p50 > 0) std::printf("  (p50 %.2fx raw)", q.p50 / raw_p50);
  std::printf("\n");
}

// Sequential PUTs then GETs of `size`-byte objects, printed against the raw p50 of that size.
void Latency(object::ObjectStore* store, const std::string& name, size_t size, int ops,
             double raw_p50) {
  const std::string data = Bytes(size);
  std::vector<double> put, get;
  for (int i = 0; i < ops; ++i) {
    const std::string key = "bench/" + std::to_string(size) + "/" + std::to_string(i);
    const auto t0 = Clock::now();
    auto etag = store->Put(key, data, {}, Deadline());
    put.push_back(Seconds(Clock::now() - t0));
    if (!etag.ok()) Die(name + " put: " + etag.status().ToString());
  }
  for (int i = 0; i < ops; ++i) {
    const std::string key = "bench/" + std::to_string(size) + "/" + std::to_string(i);
    const auto t0 = Clock::now();
    auto got = store->Get(key, object::ByteRange::All(), Deadline());
    get.push_back(Seconds(Clock::now() - t0));
    if (!got.ok() || got->size() != size) Die(name + " get failed");
  }
  const std::string label = name + " " +
                            (size >= (1 << 20) ? std::to_string(size >> 20) + " MiB"
                                               : std::to_string(size >> 10) + " KiB");
  Print(label + " PUT", put, raw_p50);
  Print(label + " GET", get, 0);
}

void Bandwidth(object::ObjectStore* store, const std::string& name, size_t size, int ops,
               double raw_mibps) {
  const std::string data = Bytes(size);
  std::vector<double> secs;
  for (int i = 0; i < ops; ++i) {
    const auto t0 = Clock::now();
    auto etag = store->Put("bench/big/" + std::to_string(i), data, {}, Deadline());
    secs.push_back(Seconds(Clock::now() - t0));
    if (!etag.ok()) Die(name + " big put: " + etag.status().ToString());
  }
  const double mibps = static_cast<double>(size >> 20) / Summarize(secs).p50;
  std::printf("%-22s %8.1f MiB/s (p50 of %d)", (name + " 64 MiB PUT").c_str(), mibps, ops);
  if (raw_mibps > 0) std::printf("  (%.2fx raw)", mibps / raw_mibps);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  kf::bench::SetProgramName("object_store_bench");
  std::string dir = ".";
  int ops = 200;
  int big_ops = 5;
  bool skip_s3 = false;
  kf::bench::FlagSet flags(argv[0]);
  flags.Add("--dir", &dir, "DIR", "data (raw, local store, RGW) goes under DIR/object_store_bench");
  flags.Add("--ops", &ops, "N", "sequential PUTs and GETs per object size and store");
  flags.Add("--big-ops", &big_ops, "N", "64 MiB PUTs per store");
  flags.AddSwitch("--skip-s3", &skip_s3, "measure only raw and the local store");
  flags.Parse(argc, argv);
  const std::string root = dir + "/object_store_bench";
  std::filesystem::remove_all(root);
  std::filesystem::create_directories(root);
  std::printf("object_store_bench: %d ops per size, %d x 64 MiB, dir %s\n", ops, big_ops,
              root.c_str());

  const size_t sizes[] = {4 << 10, 1 << 20};
  double raw_p50[2];
  for (int i = 0; i < 2; ++i) {
    const auto raw =
        kf::bench::RawWriteSync(root + "/raw", sizes[i], 30.0, static_cast<size_t>(ops));
    raw_p50[i] = Summarize(raw).p50;
    Print(std::string("raw ") + (i == 0 ? "4 KiB" : "1 MiB") + " write+sync", raw, 0);
  }
  const auto raw_big = kf::bench::RawWriteSync(root + "/raw", 64 << 20, 60.0, big_ops);
  const double raw_mibps = 64.0 / Summarize(raw_big).p50;
  std::printf("%-22s %8.1f MiB/s\n", "raw 64 MiB write+sync", raw_mibps);

  {
    auto local = object::LocalObjectStore::Open(kf::fs::DefaultFileSystem(), root + "/local");
    if (!local.ok()) Die(local.status().ToString());
    for (int i = 0; i < 2; ++i) Latency(local->get(), "local", sizes[i], ops, raw_p50[i]);
    Bandwidth(local->get(), "local", 64 << 20, big_ops, raw_mibps);
  }
  if (skip_s3) return 0;

  if (!object::testing::RgwProcess::BinariesPresent()) Die("Ceph RGW binaries missing");
  object::testing::RgwProcess rgw(root);
  const auto t0 = Clock::now();
  if (absl::Status s = rgw.Start(); !s.ok()) Die(s.ToString());
  std::printf("%-22s %8.1f s\n", "rgw start", Seconds(Clock::now() - t0));
  auto s3 = object::S3ObjectStore::Create(rgw.s3_options());
  if (!s3.ok()) Die(s3.status().ToString());
  for (int i = 0; i < 2; ++i) Latency(s3->get(), "s3/rgw", sizes[i], ops, raw_p50[i]);
  Bandwidth(s3->get(), "s3/rgw", 64 << 20, big_ops, raw_mibps);
  s3->reset();
  return 0;
}
