// search_bench: real-time search as a user meets it (issue 28, docs/search.md), each figure
// next to its baseline from the same run.
//
// Starts the real `kingfisher run standalone` (the binary next to this one, or --bin-dir) and,
// through the public client library:
//   1. loads --rows clustered --dim vectors into a one-shard L2 collection;
//   2. search latency, QPS and recall@10: --queries searches (topk 10, one at a time) through
//      Client::Search at `eventually` and at `strong` at the server's default search width,
//      once the server indexed every full chunk. Baselines, in this process on the same rows:
//      the index library faiss called directly (one IndexIVFFlat over all rows, nlist
//      4*sqrt(rows), at the smallest nprobe reaching recall 0.95); Kingfisher's own src/search
//      (chunks of 8192 rows, IVF per chunk, exact tail); exact search (src/search's AVX2 scan),
//      which is the recall reference;
//   3. freshness: while a producer inserts --rate rows/s and another thread searches 50 times a
//      second, a sampler inserts a row with a vector of its own, and as soon as the insert is
//      acknowledged searches for it at `strong`: the time from the ack to the answer that
//      contains it. Baseline: one write + fdatasync on the data dir's filesystem (the disk's
//      p99 is the floor of any acknowledged write's visibility), before the server starts;
//   4. growing memory per row (rows, and the IVF indexes apart) against the raw vector bytes.
//
// Usage: search_bench [--rows N] [--dim D] [--queries N] [--rate N] [--samples N] [--dir DIR]
//                     [--bin-dir DIR]
#include <faiss/IndexFlat.h>
#include <faiss/IndexIVFFlat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/blocking_counter.h"
#include "bench_flags.h"
#include "bench_util.h"
#include "kingfisher/client.h"
#include "kingfisher/collections.h"
#include "kingfisher/producer.h"
#include "process_stats.h"
#include "search/growing_segment.h"
#include "search/index_builder.h"
#include "search/segment_search.h"
#include "server_process.h"

namespace {

using kf::bench::Clock;
using kf::bench::Die;
using kf::bench::Seconds;

struct Flags {
  int rows = 100000;
  int dim = 128;
  int queries = 200;
  double rate = 1000;  // background inserts per second during the freshness phase
  int samples = 200;   // freshness samples
  kf::bench::BenchDirs dirs;
};

// Clustered data: 100 centres, each row a centre plus small noise.
std::vector<float> Clustered(int rows, int dim, std::mt19937& rng) {
  std::normal_distribution<float> wide(0, 1), narrow(0, 0.1f);
  std::vector<float> centres(static_cast<size_t>(100) * dim);
  for (float& x : centres) x = wide(rng);
  std::vector<float> out(static_cast<size_t>(rows) * dim);
  for (int r = 0; r < rows; ++r) {
    const float* c = &centres[static_cast<size_t>(rng() % 100) * dim];
    for (int d = 0; d < dim; ++d) out[static_cast<size_t>(r) * dim + d] = c[d] + narrow(rng);
  }
  return out;
}

double Recall(const std::vector<std::vector<int64_t>>& want,
              const std::vector<std::vector<int64_t>>& got) {
  size_t matched = 0, total = 0;
  for (size_t q = 0; q < want.size(); ++q) {
    for (int64_t pk : got[q]) matched += std::count(want[q].begin(), want[q].end(), pk) > 0;
    total += want[q].size();
  }
  return total == 0 ? 0 : static_cast<double>(matched) / static_cast<double>(total);
}

// Times `search(q)` (the pks it returns) over every query.
template <typename Fn>
std::pair<std::vector<double>, std::vector<std::vector<int64_t>>> TimeQueries(int n, Fn search) {
  std::vector<double> lat;
  std::vector<std::vector<int64_t>> pks;
  for (int q = 0; q < n; ++q) {
    const auto t0 = Clock::now();
    pks.push_back(search(q));
    lat.push_back(Seconds(Clock::now() - t0));
  }
  return {lat, pks};
}

void Print(const char* what, const std::vector<double>& seconds_samples) {
  const auto q = kf::bench::Summarize(seconds_samples);
  std::printf("  %-52s n=%-6zu p50 %8.3f ms  p99 %8.3f ms  max %8.3f ms\n", what, q.count,
              q.p50 * 1e3, q.p99 * 1e3, q.max * 1e3);
}

Flags ParseFlags(int argc, char** argv) {
  Flags f;
  kf::bench::FlagSet flags(argv[0]);
  flags.Add("--rows", &f.rows, "N", "rows loaded before searching");
  flags.Add("--dim", &f.dim, "D", "vector dimension");
  flags.Add("--queries", &f.queries, "N", "searches timed per consistency level");
  flags.Add("--rate", &f.rate, "N", "freshness phase: background inserts per second");
  flags.Add("--samples", &f.samples, "N", "freshness phase: sampled inserts");
  flags.AddDirs(&f.dirs, "the server's data dir");
  flags.Parse(argc, argv);
  if (f.rows < 1 || f.dim < 1 || f.queries < 1 || f.samples < 1 || f.rate <= 0) {
    flags.Fail("--rows, --dim, --queries, --samples and --rate must be positive");
  }
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const Flags f = ParseFlags(argc, argv);
  const std::string root = kf::bench::StartRun("search_bench", f.dirs);
  std::printf("search_bench: %d x %d-d clustered rows, L2, topk 10, data %s, kernels %s\n", f.rows,
              f.dim, root.c_str(), std::string(kf::search::KernelName()).c_str());
  const auto dim = static_cast<uint32_t>(f.dim);
  std::mt19937 rng(7);
  const std::vector<float> data = Clustered(f.rows, f.dim, rng);
  std::vector<float> queries = Clustered(f.queries, f.dim, rng);

  // Baselines before the server starts: the disk, and the index library in this process.
  const std::vector<double> disk =
      kf::bench::RawWriteSync(root + "/fdatasync.raw", static_cast<size_t>(f.dim) * 4, 1.5, 3000);
  std::vector<int64_t> all_pks(static_cast<size_t>(f.rows));
  for (int i = 0; i < f.rows; ++i) all_pks[static_cast<size_t>(i)] = i;
  const auto query_of = [&](int q) { return &queries[static_cast<size_t>(q) * dim]; };
  // Exact search: the recall reference.
  kf::search::GrowingSegment exact({.dim = dim, .metric = kf::search::Metric::kL2});
  exact.Insert(all_pks, data, 1);
  const auto search_segment = [&](const kf::search::GrowingSegment& seg, int q, size_t nprobe) {
    kf::search::TopK top(10);
    kf::search::SearchSegment(seg.Snapshot(), kf::search::Metric::kL2, dim, query_of(q), {.ts = 1},
                              nprobe, &top);
    std::vector<int64_t> pks;
    for (const auto& h : top.Take()) pks.push_back(h.pk);
    return pks;
  };
  auto [exact_lat, reference] =
      TimeQueries(f.queries, [&](int q) { return search_segment(exact, q, 0); });
  // Kingfisher's own index library: chunks of 8192 rows, each indexed in the background.
  auto indexer = std::make_shared<kf::search::IndexBuilder>(kf::search::IndexOptions{});
  kf::search::GrowingSegment segment(
      {.dim = dim, .metric = kf::search::Metric::kL2, .indexer = indexer});
  const auto build_start = Clock::now();
  segment.Insert(all_pks, data, 1);
  indexer->AwaitIdle();
  const double chunk_build_s = Seconds(Clock::now() - build_start);
  auto [own_lat, own_pks] =
      TimeQueries(f.queries, [&](int q) { return search_segment(segment, q, 0); });
  // faiss called directly: one IVF index over every row.
  const auto nlist = static_cast<size_t>(4 * std::sqrt(static_cast<double>(f.rows)));
  faiss::IndexFlatL2 quantizer(f.dim);
  faiss::IndexIVFFlat ivf(&quantizer, f.dim, std::max<size_t>(1, nlist));
  ivf.cp.niter = 10;
  const auto faiss_start = Clock::now();
  ivf.train(f.rows, data.data());
  ivf.add(f.rows, data.data());
  const double faiss_build_s = Seconds(Clock::now() - faiss_start);
  std::vector<double> faiss_lat;
  double faiss_recall = 0;
  size_t faiss_nprobe = 1;
  for (; faiss_nprobe <= ivf.nlist; faiss_nprobe *= 2) {
    faiss::SearchParametersIVF params;
    params.nprobe = faiss_nprobe;
    auto [lat, pks] = TimeQueries(f.queries, [&](int q) {
      std::vector<float> d(10);
      std::vector<faiss::Index::idx_t> ids(10);
      ivf.search(1, query_of(q), 10, d.data(), ids.data(), &params);
      std::vector<int64_t> out;
      for (auto id : ids)
        if (id >= 0) out.push_back(id);
      return out;
    });
    faiss_lat = lat;
    faiss_recall = Recall(reference, pks);
    if (faiss_recall >= 0.95) break;
  }
  const double raw_bytes = static_cast<double>(f.rows) * f.dim * 4;

  kf::testing::ServerProcess server({.data_dir = root + "/data"});
  if (!server.Start()) Die("server did not start:\n" + server.Output());
  auto client = kingfisher::Client::Connect({.endpoint = server.address()});
  if (!client.ok()) Die("connect: " + client.status().ToString());
  auto info = (*client)->CreateCollection({.name = "bench", .dim = dim, .shards = 1});
  if (!info.ok()) Die("create: " + info.status().ToString());
  auto producer = (*client)->CreateProducer();
  if (!producer.ok()) Die("producer: " + producer.status().ToString());

  // 1. Load, 1000 rows per insert, all in flight at once.
  const auto load_start = Clock::now();
  {
    std::vector<kingfisher::Message> all;
    for (int begin = 0; begin < f.rows; begin += 1000) {
      const int end = std::min(f.rows, begin + 1000);
      std::vector<int64_t> pks;
      for (int i = begin; i < end; ++i) pks.push_back(i);
      std::vector<float> vectors(data.begin() + static_cast<ptrdiff_t>(begin) * f.dim,
                                 data.begin() + static_cast<ptrdiff_t>(end) * f.dim);
      auto msgs = kingfisher::InsertMessages(*info, pks, vectors);
      if (!msgs.ok()) Die("insert: " + msgs.status().ToString());
      for (auto& m : *msgs) all.push_back(std::move(m));
    }
    absl::BlockingCounter acked(static_cast<int>(all.size()));
    std::atomic<int> failed{0};
    for (auto& m : all) {
      (*producer)->AppendAsync(std::move(m), [&](absl::StatusOr<kingfisher::AppendResult> r) {
        if (!r.ok()) failed.fetch_add(1);
        acked.DecrementCount();
      });
    }
    acked.Wait();
    if (failed.load() > 0) Die(std::to_string(failed.load()) + " inserts failed");
  }
  const double load_s = Seconds(Clock::now() - load_start);
  std::printf("load: %d rows acknowledged in %.2f s (%.0f rows/s)\n", f.rows, load_s,
              f.rows / load_s);

  // 2. Search latency and QPS through the client, one at a time, once every full chunk is
  // indexed. The first call waits for the shard to apply the load (not timed).
  {
    kingfisher::SearchOptions warm;
    warm.consistency = kingfisher::Consistency::kStrong;
    if (auto r = (*client)->Search("bench", {queries.begin(), queries.begin() + f.dim}, warm);
        !r.ok()) {
      Die("search: " + r.status().ToString());
    }
    while (kf::bench::MetricSum(server.http_port(), "kf_index_queue") != 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a gauge
    }
  }
  std::printf("search, %d queries one at a time, topk 10 (recall@10 against exact search):\n",
              f.queries);
  for (kingfisher::Consistency c :
       {kingfisher::Consistency::kEventually, kingfisher::Consistency::kStrong}) {
    kingfisher::SearchOptions o;
    o.consistency = c;
    const auto start = Clock::now();
    auto [lat, pks] = TimeQueries(f.queries, [&](int q) {
      auto r = (*client)->Search("bench", {query_of(q), query_of(q) + f.dim}, o);
      if (!r.ok()) Die("search: " + r.status().ToString());
      std::vector<int64_t> out;
      for (const auto& h : r->hits.at(0)) out.push_back(h.pk);
      return out;
    });
    const double qps = f.queries / Seconds(Clock::now() - start);
    const std::string what = "Client::Search, " + std::string(kingfisher::ConsistencyName(c));
    Print(what.c_str(), lat);
    std::printf("  %-52s %.0f QPS, recall@10 %.3f\n", "", qps, Recall(reference, pks));
  }
  {
    const std::string what = "baseline: faiss IVF in-process, nlist " + std::to_string(ivf.nlist) +
                             " nprobe " + std::to_string(faiss_nprobe);
    Print(what.c_str(), faiss_lat);
    std::printf("  %-52s recall@10 %.3f, built in %.2f s\n", "", faiss_recall, faiss_build_s);
  }
  Print("src/search in-process (IVF per chunk, nprobe 16)", own_lat);
  std::printf("  %-52s recall@10 %.3f, %zu chunks indexed in %.2f s\n", "",
              Recall(reference, own_pks), indexer->built(), chunk_build_s);
  for (size_t nprobe : {4, 8, 32}) {
    auto [lat, pks] =
        TimeQueries(f.queries, [&](int q) { return search_segment(segment, q, nprobe); });
    const std::string what = "src/search in-process, nprobe " + std::to_string(nprobe);
    Print(what.c_str(), lat);
    std::printf("  %-52s recall@10 %.3f\n", "", Recall(reference, pks));
  }
  Print("exact search in-process (src/search scan)", exact_lat);
  {
    std::vector<double> describe;
    for (int q = 0; q < f.queries; ++q) {
      const auto t0 = Clock::now();
      if (!(*client)->DescribeCollection("bench").ok()) Die("describe failed");
      describe.push_back(Seconds(Clock::now() - t0));
    }
    Print("baseline: one unary call (Client::DescribeCollection)", describe);
  }

  // 3. Freshness under load.
  std::atomic<bool> stop{false};
  std::atomic<int> background_failures{0};
  std::thread inserter([&] {
    std::mt19937 r(11);
    int64_t pk = int64_t{1} << 40;
    const auto period = std::chrono::duration<double>(1.0 / f.rate);
    auto next = Clock::now();
    std::atomic<int> in_flight{0};
    while (!stop.load()) {
      next += std::chrono::duration_cast<Clock::duration>(period);
      std::this_thread::sleep_until(next);  // pacing an open loop, not synchronisation
      std::vector<float> v = Clustered(1, f.dim, r);
      auto msgs = kingfisher::InsertMessages(*info, {pk++}, v);
      in_flight.fetch_add(1);
      (*producer)->AppendAsync(std::move((*msgs)[0]),
                               [&](absl::StatusOr<kingfisher::AppendResult> a) {
                                 if (!a.ok()) background_failures.fetch_add(1);
                                 in_flight.fetch_sub(1);
                               });
    }
    while (in_flight.load() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  std::thread searcher([&] {
    size_t q = 0;
    while (!stop.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // 50 searches/s of load
      kingfisher::SearchOptions o;
      o.consistency = kingfisher::Consistency::kBounded;
      (void)(*client)->Search("bench",
                              {queries.begin() + static_cast<ptrdiff_t>(q % f.queries) * f.dim,
                               queries.begin() + static_cast<ptrdiff_t>(q % f.queries + 1) * f.dim},
                              o);
      ++q;
    }
  });
  std::vector<double> fresh;
  int retried = 0;
  std::mt19937 sr(13);
  for (int s = 0; s < f.samples; ++s) {
    const int64_t pk = (int64_t{1} << 50) + s;
    std::vector<float> v(static_cast<size_t>(f.dim));
    for (float& x : v) x = std::uniform_real_distribution<float>(10, 20)(sr);  // far from all
    auto msgs = kingfisher::InsertMessages(*info, {pk}, v);
    auto ack = (*producer)->AppendSync(std::move((*msgs)[0]));
    if (!ack.ok()) Die("sample insert: " + ack.status().ToString());
    const auto acked = Clock::now();
    for (;;) {
      kingfisher::SearchOptions o;
      o.consistency = kingfisher::Consistency::kStrong;
      o.topk = 1;
      auto r = (*client)->Search("bench", v, o);
      if (!r.ok()) Die("freshness search: " + r.status().ToString());
      if (!r->hits[0].empty() && r->hits[0][0].pk == pk) break;
      ++retried;  // a strong search that missed an acknowledged row: a bug, counted
    }
    fresh.push_back(Seconds(Clock::now() - acked));
  }
  stop = true;
  inserter.join();
  searcher.join();
  std::printf(
      "freshness: ack -> found by a strong search, while %.0f inserts/s and 50 searches/s "
      "run (%d strong searches missed an acked row):\n",
      f.rate, retried);
  Print("insert acknowledged -> visible to strong search", fresh);
  Print("baseline: the disk, one write + fdatasync", disk);

  // 4. Memory.
  std::printf(
      "growing memory: rows %.1f MB for %.1f MB of raw vectors (%.2fx), plus IVF indexes "
      "%.1f MB (%.2fx)\n",
      segment.memory_bytes() / 1e6, raw_bytes / 1e6, segment.memory_bytes() / raw_bytes,
      segment.index_bytes() / 1e6, segment.index_bytes() / raw_bytes);
  (*producer)->Close();
  if (background_failures.load() > 0) {
    std::printf("%d background inserts failed\n", background_failures.load());
  }
  return retried == 0 && background_failures.load() == 0 ? 0 : 1;
}
