// quorum_bench: ack latency of the quorum WAL backend (docs/quality-bars.md: p50 < 2 ms on loopback
// with fsync on the logstores) next to one raw write + fdatasync of the same size measured in the
// same run on the same filesystem. Three real `kingfisher run logstore` processes on loopback,
// their data under --dir; the writer (this process) appends one entry at a time and waits for
// its acknowledgement (2 of 3 logstores made it durable), then a second phase keeps
// --in-flight appends outstanding and reports throughput.
// Usage: quorum_bench [--dir DIR] [--bin-dir DIR] [--ops N] [--bytes B] [--in-flight N]
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "bench_flags.h"
#include "bench_util.h"
#include "server_process.h"
#include "storage/meta/embedded_meta_store.h"
#include "wal/backends/quorum/quorum_opener.h"

namespace {

using kf::bench::Clock;
using kf::bench::Die;
using kf::bench::Seconds;
using kf::bench::Summarize;

void Print(const char* what, const std::vector<double>& lat, double raw_p50) {
  const auto q = Summarize(lat);
  std::printf("%-22s p50 %7.3f ms  p99 %7.3f ms", what, q.p50 * 1e3, q.p99 * 1e3);
  if (raw_p50 > 0) std::printf("  (p50 %.2fx raw fdatasync)", q.p50 / raw_p50);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  kf::bench::BenchDirs dirs = kf::bench::DefaultDirs(argv[0]);
  int ops = 2000;
  size_t bytes = 1024;
  int in_flight = 64;
  kf::bench::FlagSet flags(argv[0]);
  flags.AddDirs(&dirs, "the logstores' data and the metadata store");
  flags.Add("--ops", &ops, "N", "sequential appends (and N x 10 pipelined ones)");
  flags.Add("--bytes", &bytes, "B", "entry size");
  flags.Add("--in-flight", &in_flight, "N", "appends outstanding in the throughput phase");
  flags.Parse(argc, argv);
  const std::string run = kf::bench::StartRun("quorum_bench", dirs);

  std::vector<std::unique_ptr<kf::testing::ServerProcess>> stores;
  std::vector<std::string> addresses;
  for (int i = 0; i < 3; ++i) {
    kf::testing::ServerProcess::Options o;
    o.role = "logstore";
    o.data_dir = run + "/logstore" + std::to_string(i);
    stores.push_back(std::make_unique<kf::testing::ServerProcess>(o));
    if (!stores.back()->Start()) Die("logstore did not start: " + stores.back()->Output());
    addresses.push_back(stores.back()->address());
  }
  auto meta = kf::meta::EmbeddedMetaStore::Open(run + "/meta", {});
  if (!meta.ok()) Die(meta.status().ToString());
  kf::wal::quorum::QuorumOpenerOptions options;
  options.meta = meta->get();
  options.logstores = addresses;
  auto opener = kf::wal::quorum::NewQuorumOpener(options);
  kf::wal::OpenOptions open;
  open.pchannel = "bench";
  open.term = kf::Term(1);
  auto wal = opener->Open(open);
  if (!wal.ok()) Die(wal.status().ToString());
  const std::string payload(bytes, 'q');

  std::printf("quorum_bench: 3 logstores on loopback, %zu B entries, dir %s\n", bytes, run.c_str());
  // The baseline: what one logstore pays per batch at least (its batch header is 32 B more).
  const auto raw = kf::bench::RawWriteSync(run + "/raw", bytes + 32, 30, static_cast<size_t>(ops));
  const double raw_p50 = Summarize(raw).p50;
  Print("raw write+fdatasync", raw, 0);

  std::vector<double> lat;
  lat.reserve(static_cast<size_t>(ops));
  for (int i = 0; i < ops; ++i) {
    kf::bench::Ack<absl::Status> done;
    const auto t0 = Clock::now();
    auto id = (*wal)->Append(payload, [&done](absl::Status s) { done.Set(std::move(s)); });
    if (!id.ok()) Die(id.status().ToString());
    absl::Status s = done.Wait();
    lat.push_back(Seconds(Clock::now() - t0));
    if (!s.ok()) Die(s.ToString());
  }
  Print("quorum ack (1 in flight)", lat, raw_p50);

  // Throughput with appends pipelined: group commit per logstore round trip.
  absl::Mutex mu;
  struct Window {
    int outstanding = 0;
    int limit = 0;
  } window{0, in_flight};
  int& outstanding = window.outstanding;
  int completed = 0;
  absl::Status error;
  const int total = ops * 10;
  const auto t0 = Clock::now();
  for (int i = 0; i < total; ++i) {
    {
      absl::MutexLock l(&mu);
      mu.Await(absl::Condition(
          +[](Window* w) { return w->outstanding < w->limit; }, &window));
      ++outstanding;
    }
    auto id = (*wal)->Append(payload, [&](absl::Status s) {
      absl::MutexLock l(&mu);
      --outstanding;
      ++completed;
      if (!s.ok() && error.ok()) error = s;
    });
    if (!id.ok()) Die(id.status().ToString());
  }
  {
    absl::MutexLock l(&mu);
    mu.Await(absl::Condition(
        +[](int* c) { return *c == 0; }, &outstanding));
    if (!error.ok()) Die(error.ToString());
  }
  const double secs = Seconds(Clock::now() - t0);
  std::printf("%-22s %8.0f appends/s  %7.1f MiB/s (%d in flight)\n", "quorum throughput",
              total / secs, total * static_cast<double>(bytes) / secs / (1 << 20), in_flight);
  const double p50 = Summarize(lat).p50;
  std::printf("bar: quorum ack p50 < 2 ms: %s (%.3f ms)\n", p50 < 0.002 ? "PASS" : "FAIL",
              p50 * 1e3);
  if (!(*wal)->Close().ok()) Die("close");
  for (auto& s : stores) s->Stop();
  return 0;
}
