#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/coding.h"
#include "common/errors.h"
#include "common/testing/seed_mutations.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/delete_log_format.h"
#include "search/growing_segment.h"
#include "search/index_builder.h"
#include "search/metric.h"
#include "search/sealed_segment_format.h"
#include "search/sealed_segment_fuzz_body.h"
#include "search/segment_search.h"
#include "search/top_k.h"

namespace kf::search {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<float> RandomVector(std::mt19937& rng, size_t dim) {
  std::normal_distribution<float> d(0, 1);
  std::vector<float> v(dim);
  for (float& x : v) x = d(rng);
  return v;
}

TEST(MetricTest, KernelsAgreeWithADoublePrecisionSumAtEveryLength) {
  std::mt19937 rng(1);
  for (size_t dim = 1; dim <= 70; ++dim) {
    const std::vector<float> a = RandomVector(rng, dim), b = RandomVector(rng, dim);
    double l2 = 0, ip = 0;
    for (size_t i = 0; i < dim; ++i) {
      l2 += (double{a[i]} - b[i]) * (double{a[i]} - b[i]);
      ip += double{a[i]} * b[i];
    }
    EXPECT_NEAR(L2Sqr(a.data(), b.data(), dim), l2, 1e-4 * (1 + std::abs(l2))) << dim;
    EXPECT_NEAR(InnerProduct(a.data(), b.data(), dim), ip, 1e-4 * (1 + std::abs(ip))) << dim;
  }
  EXPECT_THAT(KernelName(), ::testing::AnyOf("avx2", "portable"));
}

TEST(MetricTest, NormalizeMakesUnitVectorsAndLeavesZeroAlone) {
  std::vector<float> v = {3, 4};
  Normalize(v.data(), v.size());
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(v[1], 0.8f);
  std::vector<float> zero = {0, 0, 0};
  Normalize(zero.data(), zero.size());
  EXPECT_THAT(zero, ElementsAre(0, 0, 0));
}

TEST(MetricTest, NamesAndDistances) {
  EXPECT_EQ(MetricName(Metric::kL2), "L2");
  EXPECT_EQ(MetricName(Metric::kIP), "IP");
  EXPECT_EQ(MetricName(Metric::kCosine), "COSINE");
  // Lower score is better; the user sees the metric's own distance.
  const float a[] = {1, 0}, b[] = {0.5f, 0};
  EXPECT_FLOAT_EQ(DistanceOf(Metric::kIP, Score(Metric::kIP, a, b, 2)), 0.5f);
  EXPECT_FLOAT_EQ(DistanceOf(Metric::kL2, Score(Metric::kL2, a, b, 2)), 0.25f);
}

TEST(TopKTest, KeepsTheKBestAndBreaksTiesBySmallerPk) {
  TopK top(3);
  for (Hit h : {Hit{5, 1}, Hit{1, 2}, Hit{3, 9}, Hit{3, 4}, Hit{0.5, 7}, Hit{3, 3}}) top.Push(h);
  EXPECT_THAT(top.Take(), ElementsAre(Hit{0.5, 7}, Hit{1, 2}, Hit{3, 3}));
  TopK none(0);
  none.Push({1, 1});
  EXPECT_THAT(none.Take(), IsEmpty());
}

TEST(TopKTest, MergeIsTheTopOfTheUnion) {
  std::mt19937 rng(2);
  std::uniform_int_distribution<int> score(0, 50);
  std::vector<std::vector<Hit>> parts(4);
  std::vector<Hit> all;
  int64_t pk = 0;
  for (auto& part : parts) {
    for (int i = 0; i < 30; ++i) part.push_back({static_cast<float>(score(rng)), pk++});
    all.insert(all.end(), part.begin(), part.end());
  }
  std::sort(all.begin(), all.end());
  all.resize(10);
  EXPECT_EQ(MergeTopK(parts, 10), all);
}

// One row per pk whose first component is the pk: a reader that sees a row half written would
// see them disagree.
std::vector<float> RowOf(int64_t pk, size_t dim) {
  std::vector<float> v(dim, 0.25f);
  v[0] = static_cast<float>(pk);
  return v;
}

TEST(GrowingSegmentTest, InsertsAndDeletesAreVisibleFromTheirTimestamp) {
  GrowingSegment seg({.dim = 2, .metric = Metric::kL2, .chunk_rows = 2});
  const int64_t pks[] = {1, 2, 3};
  const float vectors[] = {1, 1, 2, 2, 3, 3};
  seg.Insert(pks, vectors, 10);
  EXPECT_EQ(seg.Delete(2, 20), 1u);
  EXPECT_EQ(seg.Delete(2, 25), 0u);  // already hidden
  EXPECT_EQ(seg.Delete(9, 25), 0u);  // unknown pk
  const int64_t again[] = {2};
  const float v2[] = {7, 7};
  seg.Insert(again, v2, 30);  // the pk comes back with another vector
  EXPECT_EQ(seg.rows(), 4u);

  auto get = [&](int64_t pk, uint64_t ts) {
    std::vector<std::vector<float>> out;
    seg.Get(pk, ts, &out);
    return out;
  };
  EXPECT_THAT(get(2, 9), IsEmpty());
  EXPECT_THAT(get(2, 10), ElementsAre(ElementsAre(2, 2)));
  EXPECT_THAT(get(2, 19), ElementsAre(ElementsAre(2, 2)));
  EXPECT_THAT(get(2, 20), IsEmpty());
  EXPECT_THAT(get(2, 30), ElementsAre(ElementsAre(7, 7)));
  EXPECT_THAT(get(3, 100), ElementsAre(ElementsAre(3, 3)));

  const float q[] = {2, 2};
  auto search = [&](uint64_t ts) {
    TopK top(10);
    SearchSegment(seg.Snapshot(), Metric::kL2, 2, q, {.ts = ts}, 0, &top);
    return top.Take();
  };
  EXPECT_THAT(search(15), ElementsAre(Hit{0, 2}, Hit{2, 1}, Hit{2, 3}));
  EXPECT_THAT(search(20), ElementsAre(Hit{2, 1}, Hit{2, 3}));
  EXPECT_THAT(search(30), ElementsAre(Hit{2, 1}, Hit{2, 3}, Hit{50, 2}));
}

// A segment sealed early (by age or a flush) keeps no unused capacity: its partial last chunk
// shrinks to its rows, which answer, take deletes and chain their pks as before; a reader's
// snapshot taken before the seal stays valid.
TEST(GrowingSegmentTest, SealingShrinksThePartialLastChunkToItsRows) {
  auto account = std::make_shared<MemoryAccount>();
  GrowingSegment seg({.dim = 2, .metric = Metric::kL2, .chunk_rows = 64, .account = account});
  const int64_t pks[] = {1, 2, 1};
  const float vectors[] = {1, 1, 2, 2, 3, 3};
  seg.Insert(pks, vectors, 10);
  const float q[] = {0, 0};
  auto search = [&](const SegmentSnapshot& snap, uint64_t ts) {
    TopK top(10);
    SearchSegment(snap, Metric::kL2, 2, q, {.ts = ts}, 0, &top);
    return top.Take();
  };
  const size_t before = account->bytes();
  {
    const SegmentSnapshot old = seg.Snapshot();
    seg.Seal();
    EXPECT_THAT(search(old, 15), ElementsAre(Hit{2, 1}, Hit{8, 2}, Hit{18, 1}));
  }  // the old chunk goes with the last reader holding it
  EXPECT_EQ(before - account->bytes(), (64 - 3) * Chunk::BytesPerRow(2));
  EXPECT_EQ(seg.Snapshot().chunks.front()->capacity(), 3u);
  EXPECT_EQ(seg.Delete(1, 20), 2u);  // both rows of pk 1, chained across the copy
  EXPECT_THAT(search(seg.Snapshot(), 15), ElementsAre(Hit{2, 1}, Hit{8, 2}, Hit{18, 1}));
  EXPECT_THAT(search(seg.Snapshot(), 20), ElementsAre(Hit{8, 2}));
  seg.Seal();  // twice: nothing more
  EXPECT_EQ(seg.Snapshot().chunks.front()->capacity(), 3u);
}

TEST(GrowingSegmentTest, ADeleteHidesRowsOfTheSameTimestampAppliedBeforeIt) {
  // One transaction: insert pk 1, delete pk 1, insert pk 1 again, all at its commit.
  GrowingSegment seg({.dim = 1, .metric = Metric::kL2, .chunk_rows = 8});
  const int64_t pk[] = {1};
  const float first[] = {1}, second[] = {2};
  seg.Insert(pk, first, 50);
  EXPECT_EQ(seg.Delete(1, 50), 1u);
  seg.Insert(pk, second, 50);
  std::vector<std::vector<float>> out;
  seg.Get(1, 50, &out);
  EXPECT_THAT(out, ElementsAre(ElementsAre(2)));
}

TEST(GrowingSegmentTest, CosineRowsAreStoredNormalised) {
  GrowingSegment seg({.dim = 2, .metric = Metric::kCosine, .chunk_rows = 4});
  const int64_t pks[] = {1, 2};
  const float vectors[] = {10, 0, 0, 3};
  seg.Insert(pks, vectors, 1);
  const float q[] = {1, 0};  // already unit
  TopK top(2);
  SearchSegment(seg.Snapshot(), Metric::kCosine, 2, q, {.ts = 1}, 0, &top);
  const std::vector<Hit> hits = top.Take();
  ASSERT_EQ(hits.size(), 2u);
  EXPECT_EQ(hits[0].pk, 1);
  EXPECT_FLOAT_EQ(DistanceOf(Metric::kCosine, hits[0].score), 1);
  EXPECT_FLOAT_EQ(DistanceOf(Metric::kCosine, hits[1].score), 0);
}

// Exact search against a reference that scores every row itself.
TEST(FlatSearchTest, EqualsAFullScanForEveryMetricTimestampAndPkRange) {
  std::mt19937 rng(3);
  constexpr uint32_t kDim = 19;  // not a multiple of the SIMD width
  for (Metric metric : {Metric::kL2, Metric::kIP, Metric::kCosine}) {
    GrowingSegment seg({.dim = kDim, .metric = metric, .chunk_rows = 64});
    struct Row {
      int64_t pk;
      std::vector<float> v;
      uint64_t inserted, deleted = kNotDeleted;
    };
    std::vector<Row> rows;
    uint64_t ts = 0;
    for (int batch = 0; batch < 40; ++batch) {
      ++ts;
      std::vector<int64_t> pks;
      std::vector<float> vectors;
      for (int i = 0; i < 13; ++i) {
        const int64_t pk = std::uniform_int_distribution<int64_t>(0, 300)(rng);
        std::vector<float> v = RandomVector(rng, kDim);
        pks.push_back(pk);
        vectors.insert(vectors.end(), v.begin(), v.end());
        if (metric == Metric::kCosine) Normalize(v.data(), kDim);
        rows.push_back({pk, v, ts});
      }
      seg.Insert(pks, vectors, ts);
      ++ts;
      for (int i = 0; i < 4; ++i) {
        const int64_t pk = std::uniform_int_distribution<int64_t>(0, 300)(rng);
        seg.Delete(pk, ts);
        for (Row& r : rows) {
          if (r.pk == pk && r.deleted == kNotDeleted) r.deleted = ts;
        }
      }
    }
    for (int q = 0; q < 30; ++q) {
      std::vector<float> query = RandomVector(rng, kDim);
      if (metric == Metric::kCosine) Normalize(query.data(), kDim);
      SearchFilter filter{.ts = std::uniform_int_distribution<uint64_t>(0, ts)(rng)};
      if (q % 3 == 0) {
        filter.min_pk = 50;
        filter.max_pk = 120;
      }
      const size_t k = q % 2 == 0 ? 10 : 1000;
      TopK want_top(k);
      for (const Row& r : rows) {
        if (r.inserted > filter.ts || filter.ts >= r.deleted) continue;
        if (r.pk < filter.min_pk || r.pk > filter.max_pk) continue;
        want_top.Push({Score(metric, query.data(), r.v.data(), kDim), r.pk});
      }
      TopK got(k);
      SearchSegment(seg.Snapshot(), metric, kDim, query.data(), filter, 0, &got);
      EXPECT_EQ(got.Take(), want_top.Take()) << MetricName(metric) << " query " << q;
    }
  }
}

TEST(GrowingSegmentTest, ReadersSeeOnlyWholeRowsWhileTheWriterAppends) {
  constexpr uint32_t kDim = 8;
  constexpr int64_t kRows = 20000;
  GrowingSegment seg({.dim = kDim, .metric = Metric::kL2, .chunk_rows = 100});
  std::atomic<bool> done{false};
  std::thread writer([&] {
    for (int64_t pk = 0; pk < kRows; pk += 10) {
      std::vector<int64_t> pks;
      std::vector<float> vectors;
      for (int64_t p = pk; p < pk + 10; ++p) {
        pks.push_back(p);
        const std::vector<float> v = RowOf(p, kDim);
        vectors.insert(vectors.end(), v.begin(), v.end());
      }
      seg.Insert(pks, vectors, static_cast<uint64_t>(pk + 1));
      if (pk % 30 == 0) seg.Delete(pk, static_cast<uint64_t>(pk + 2));
    }
    done = true;
  });
  size_t last = 0;
  int bad = 0;
  while (!done.load() || last < kRows) {
    const SegmentSnapshot snap = seg.Snapshot();
    ASSERT_GE(snap.rows, last);
    last = snap.rows;
    for (size_t c = 0; c < snap.chunks.size(); ++c) {
      for (size_t r = 0; r < snap.RowsIn(c); ++r) {
        const Chunk& chunk = *snap.chunks[c];
        const int64_t pk = chunk.pk(r);
        bad += chunk.vector(r)[0] != static_cast<float>(pk) || chunk.vector(r)[kDim - 1] != 0.25f ||
               static_cast<size_t>(pk) != c * snap.chunk_rows + r;
      }
    }
  }
  writer.join();
  EXPECT_EQ(bad, 0);
  EXPECT_EQ(seg.rows(), static_cast<size_t>(kRows));
  // The memory figure covers at least the raw vectors.
  const size_t raw = kRows * kDim * sizeof(float);
  EXPECT_GE(seg.memory_bytes(), raw);
}

// Clustered rows (as real embeddings are): `clusters` centres, each row a centre plus noise.
std::vector<float> ClusteredRows(std::mt19937& rng, size_t rows, uint32_t dim, size_t clusters) {
  std::vector<std::vector<float>> centres;
  for (size_t c = 0; c < clusters; ++c) centres.push_back(RandomVector(rng, dim));
  std::normal_distribution<float> noise(0, 0.3f);
  std::uniform_int_distribution<size_t> pick(0, clusters - 1);
  std::vector<float> out;
  out.reserve(rows * dim);
  for (size_t r = 0; r < rows; ++r) {
    const std::vector<float>& c = centres[pick(rng)];
    for (uint32_t i = 0; i < dim; ++i) out.push_back(c[i] + noise(rng));
  }
  return out;
}

std::vector<int64_t> PksOf(const std::vector<Hit>& hits) {
  std::vector<int64_t> pks;
  for (const Hit& h : hits) pks.push_back(h.pk);
  std::sort(pks.begin(), pks.end());
  return pks;
}

// The IVF path: full chunks are indexed in the background, the tail stays exact; probing every
// list is exact search, the default width keeps recall, and hidden rows are filtered inside the
// scan (a search with 90% of the rows deleted still gets its k best visible ones).
TEST(IvfIndexTest, IndexedChunksKeepRecallAndFilterInsideTheScan) {
  constexpr uint32_t kDim = 32;
  constexpr size_t kRows = 4 * 2048 + 700, kChunk = 2048;
  std::mt19937 rng(5);
  const std::vector<float> data = ClusteredRows(rng, kRows, kDim, 40);
  for (Metric metric : {Metric::kL2, Metric::kIP, Metric::kCosine}) {
    auto indexer = std::make_shared<IndexBuilder>(IndexOptions{});
    GrowingSegment indexed(
        {.dim = kDim, .metric = metric, .chunk_rows = kChunk, .indexer = indexer});
    GrowingSegment exact({.dim = kDim, .metric = metric, .chunk_rows = kChunk});
    std::vector<int64_t> pks(kRows);
    for (size_t i = 0; i < kRows; ++i) pks[i] = static_cast<int64_t>(i);
    for (size_t at = 0; at < kRows; at += 500) {  // batches that straddle chunk ends
      const size_t n = std::min<size_t>(500, kRows - at);
      const auto p = std::span(pks).subspan(at, n);
      const auto v = std::span(data).subspan(at * kDim, n * kDim);
      indexed.Insert(p, v, 1);
      exact.Insert(p, v, 1);
    }
    indexer->AwaitIdle();
    ASSERT_EQ(indexer->built(), 4u) << MetricName(metric);
    const SegmentSnapshot snap = indexed.Snapshot();
    for (size_t c = 0; c < 4; ++c) ASSERT_NE(snap.chunks[c]->index(), nullptr);
    EXPECT_EQ(snap.chunks[4]->index(), nullptr);  // the tail
    const size_t nlist = snap.chunks[0]->index()->nlist();
    EXPECT_EQ(nlist, kChunk / IndexOptions{}.rows_per_list);
    // Centroids, the lists' vectors and row ids.
    EXPECT_EQ(indexed.index_bytes(), 4 * ((nlist * kDim + kChunk * kDim + nlist + 1 + kChunk) * 4));

    const auto search = [&](const GrowingSegment& seg, const float* q, const SearchFilter& f,
                            size_t nprobe) {
      TopK top(10);
      SearchSegment(seg.Snapshot(), metric, kDim, q, f, nprobe, &top);
      return PksOf(top.Take());
    };
    size_t found = 0, wanted = 0;
    for (int i = 0; i < 200; ++i) {
      // Queries near the data: a row plus noise.
      std::vector<float> q(data.begin() + (i * 37 % kRows) * kDim,
                           data.begin() + (i * 37 % kRows + 1) * kDim);
      for (float& x : q) x += std::normal_distribution<float>(0, 0.1f)(rng);
      if (metric == Metric::kCosine) Normalize(q.data(), kDim);
      const std::vector<int64_t> want = search(exact, q.data(), {.ts = 1}, 0);
      EXPECT_EQ(search(indexed, q.data(), {.ts = 1}, nlist), want) << "every list probed";
      const std::vector<int64_t> got = search(indexed, q.data(), {.ts = 1}, 0);
      wanted += want.size();
      for (int64_t pk : got) found += std::binary_search(want.begin(), want.end(), pk);
    }
    EXPECT_GE(static_cast<double>(found) / wanted, 0.95) << MetricName(metric);

    // Hide 90% of the rows at ts 2 (a visible row's pk % 10 == 3) and limit the pk range.
    for (int64_t pk = 0; pk < static_cast<int64_t>(kRows); ++pk) {
      if (pk % 10 != 3) {
        indexed.Delete(pk, 2);
        exact.Delete(pk, 2);
      }
    }
    const SearchFilter hidden{.ts = 2, .min_pk = 1000, .max_pk = 7000};
    for (int i = 0; i < 20; ++i) {
      const std::vector<float> q = RandomVector(rng, kDim);
      const std::vector<int64_t> want = search(exact, q.data(), hidden, 0);
      ASSERT_EQ(want.size(), 10u);
      EXPECT_EQ(search(indexed, q.data(), hidden, nlist), want);
      for (int64_t pk : search(indexed, q.data(), hidden, 0)) {
        EXPECT_EQ(pk % 10, 3);
        EXPECT_GE(pk, 1000);
        EXPECT_LE(pk, 7000);
      }
      // Before the deletes, the same search sees them all again (MVCC).
      EXPECT_EQ(search(indexed, q.data(), {.ts = 1}, nlist), search(exact, q.data(), {.ts = 1}, 0));
    }
  }
}

TEST(IvfIndexTest, ABuilderStopsWithWorkQueuedAndSkipsDroppedChunks) {
  auto indexer = std::make_shared<IndexBuilder>(IndexOptions{});
  std::mt19937 rng(6);
  const std::vector<float> data = ClusteredRows(rng, 3 * 512, 8, 4);
  std::vector<int64_t> pks(3 * 512, 7);
  {
    GrowingSegment seg({.dim = 8, .metric = Metric::kL2, .chunk_rows = 512, .indexer = indexer});
    seg.Insert(pks, data, 1);
  }  // dropped before (or while) its chunks are built: nothing dangles
  indexer->AwaitIdle();
  EXPECT_LE(indexer->built(), 3u);
  GrowingSegment seg({.dim = 8, .metric = Metric::kL2, .chunk_rows = 512, .indexer = indexer});
  seg.Insert(pks, data, 1);
  // Destroyed with the segment's chunks queued: the destructor does not wait for them.
}

// --- The sealed segment object (sealed_segment_format.h).

// A segment of `rows` clustered rows in chunks of `chunk` (the full ones indexed), some deleted.
std::unique_ptr<GrowingSegment> SealableSegment(Metric metric, uint32_t dim, size_t rows,
                                                size_t chunk) {
  std::mt19937 rng(11);
  const std::vector<float> data = ClusteredRows(rng, rows, dim, 8);
  auto indexer = std::make_shared<IndexBuilder>(IndexOptions{});
  auto seg = std::make_unique<GrowingSegment>(
      SegmentOptions{.dim = dim, .metric = metric, .chunk_rows = chunk, .indexer = indexer});
  for (size_t r = 0; r < rows; ++r) {
    const int64_t pk = static_cast<int64_t>(1000 + r);
    seg->Insert(std::span(&pk, 1), std::span(data).subspan(r * dim, dim), 10 + r);
  }
  for (size_t r = 0; r < rows; r += 7) seg->Delete(static_cast<int64_t>(1000 + r), 10 + rows + r);
  indexer->AwaitIdle();
  return seg;
}

SealedSegmentMeta MetaOf(const GrowingSegment& seg) {
  return {.collection_id = 7,
          .segment_id = 42,
          .vchannel = "kf-dml_0_7v0",
          .partition = "p1",
          .dim = seg.options().dim,
          .metric = seg.options().metric,
          .chunk_rows = static_cast<uint32_t>(seg.options().chunk_rows)};
}

TEST(SealedSegmentTest, ADecodedSegmentHasEveryRowAndIndexAndSearchesTheSame) {
  constexpr uint32_t kDim = 16;
  constexpr size_t kChunk = 512, kRows = 2 * kChunk + 100;
  for (Metric metric : {Metric::kL2, Metric::kIP, Metric::kCosine}) {
    auto seg = SealableSegment(metric, kDim, kRows, kChunk);
    const SegmentSnapshot before = seg->Snapshot();
    ASSERT_NE(before.chunks[1]->index(), nullptr);
    auto bytes = EncodeSealedSegment(MetaOf(*seg), before);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    auto account = std::make_shared<MemoryAccount>();
    auto decoded = DecodeSealedSegment(*bytes, "seg-42", account);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    const SealedSegmentMeta& m = decoded->meta;
    EXPECT_EQ(m.collection_id, 7);
    EXPECT_EQ(m.segment_id, 42);
    EXPECT_EQ(m.vchannel, "kf-dml_0_7v0");
    EXPECT_EQ(m.partition, "p1");
    EXPECT_EQ(m.metric, metric);
    EXPECT_EQ(m.rows, kRows);
    EXPECT_EQ(m.min_ts, 10u);
    EXPECT_EQ(m.max_ts, 10 + kRows - 1);
    const SegmentSnapshot after = decoded->snapshot();
    ASSERT_EQ(after.chunks.size(), 3u);
    EXPECT_GT(account->bytes(), kRows * kDim * sizeof(float));
    for (size_t c = 0; c < 3; ++c) {
      // Full chunks keep their index as built (same lists), the tail has none.
      const IvfIndex* want = before.chunks[c]->index();
      const IvfIndex* got = after.chunks[c]->index();
      ASSERT_EQ(got == nullptr, want == nullptr) << c;
      if (want != nullptr) {
        EXPECT_TRUE(std::ranges::equal(got->parts().centroids, want->parts().centroids));
        EXPECT_TRUE(std::ranges::equal(got->parts().list_rows, want->parts().list_rows));
        EXPECT_TRUE(std::ranges::equal(got->parts().list_vectors, want->parts().list_vectors));
      }
      for (size_t r = 0; r < before.RowsIn(c); ++r) {
        const Chunk &a = *before.chunks[c], &b = *after.chunks[c];
        ASSERT_EQ(b.pk(r), a.pk(r));
        ASSERT_EQ(b.inserted(r), a.inserted(r));
        ASSERT_EQ(b.deleted(r), a.deleted(r));
        ASSERT_TRUE(std::equal(a.vector(r), a.vector(r) + kDim, b.vector(r)));
      }
    }
    std::mt19937 rng(3);
    for (int q = 0; q < 20; ++q) {
      std::vector<float> query = RandomVector(rng, kDim);
      if (metric == Metric::kCosine) Normalize(query.data(), kDim);
      for (uint64_t ts : {uint64_t{500}, uint64_t{10 + kRows + kRows}}) {
        for (size_t nprobe : {size_t{0}, size_t{1000}}) {
          TopK x(10), y(10);
          SearchSegment(before, metric, kDim, query.data(), {.ts = ts}, nprobe, &x);
          SearchSegment(after, metric, kDim, query.data(), {.ts = ts}, nprobe, &y);
          EXPECT_EQ(y.Take(), x.Take()) << MetricName(metric) << " ts " << ts;
        }
      }
    }
  }
}

// A segment loaded from its object (recovery storage) answers gets, deletes and searches as the
// segment it was sealed from, and takes no rows.
TEST(SealedSegmentTest, ALoadedSegmentGetsDeletesAndSearchesAsTheOriginal) {
  constexpr uint32_t kDim = 8;
  constexpr size_t kChunk = 128, kRows = 3 * kChunk + 17;
  auto original = SealableSegment(Metric::kL2, kDim, kRows, kChunk);
  // A pk inserted twice, across chunks: the rebuilt pk index must chain both rows.
  const int64_t twice = 1001;
  const std::vector<float> again(kDim, 0.25f);
  original->Insert(std::span(&twice, 1), again, 10 + kRows + kRows);
  original->Seal();
  EXPECT_TRUE(original->sealed());
  auto bytes = EncodeSealedSegment(MetaOf(*original), original->Snapshot());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto account = std::make_shared<MemoryAccount>();
  auto decoded = DecodeSealedSegment(*bytes, "o", account);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  const size_t rows = decoded->meta.rows;
  auto loaded = GrowingSegment::FromChunks(std::move(decoded->chunks), rows,
                                           {.dim = kDim, .chunk_rows = kChunk, .account = account});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  GrowingSegment& l = **loaded;
  EXPECT_TRUE(l.sealed());
  EXPECT_EQ(l.rows(), kRows + 1);
  EXPECT_GE(account->bytes(), l.memory_bytes());

  const uint64_t late = 10 + 3 * kRows;
  for (uint64_t ts : {uint64_t{20}, late - 1, late + 5}) {
    for (int64_t pk : {int64_t{1000}, twice, int64_t{1000 + kRows - 1}, int64_t{99}}) {
      std::vector<std::vector<float>> want, got;
      original->Get(pk, ts, &want);
      l.Get(pk, ts, &got);
      EXPECT_EQ(got, want) << "pk " << pk << " at " << ts;
    }
  }
  // The same delete on both: the same rows hidden from then on. The pk index is built by the
  // first lookup, a Delete as well as a Get.
  auto decoded_again = DecodeSealedSegment(*bytes, "o", account);
  ASSERT_TRUE(decoded_again.ok()) << decoded_again.status();
  auto deleted_first = GrowingSegment::FromChunks(std::move(decoded_again->chunks), rows,
                                                  {.dim = kDim, .chunk_rows = kChunk});
  ASSERT_TRUE(deleted_first.ok()) << deleted_first.status();
  const size_t hidden = original->Delete(twice, late);
  EXPECT_EQ(hidden, 2u);
  EXPECT_EQ(l.Delete(twice, late), hidden);
  EXPECT_EQ((*deleted_first)->Delete(twice, late), hidden);
  EXPECT_EQ(l.Delete(1005, late), 1u);
  original->Delete(1005, late);
  std::mt19937 rng(9);
  for (int q = 0; q < 20; ++q) {
    const std::vector<float> query = RandomVector(rng, kDim);
    for (uint64_t ts : {late - 1, late + 1}) {
      TopK x(10), y(10);
      SearchSegment(original->Snapshot(), Metric::kL2, kDim, query.data(), {.ts = ts}, 0, &x);
      SearchSegment(l.Snapshot(), Metric::kL2, kDim, query.data(), {.ts = ts}, 0, &y);
      EXPECT_EQ(y.Take(), x.Take()) << "ts " << ts;
    }
  }
  // Chunks that do not hold the rows are refused.
  EXPECT_FALSE(GrowingSegment::FromChunks({}, 5, {.dim = kDim, .chunk_rows = kChunk}).ok());
}

// Loading copies no column: a decoded segment's pks, timestamps, vectors and index lists are the
// object's bytes, held by its chunks after the reader let go of them.
TEST(SealedSegmentTest, ADecodedSegmentSearchesTheObjectsBytesInPlaceAndKeepsThem) {
  constexpr uint32_t kDim = 8;
  constexpr size_t kChunk = 64, kRows = 2 * kChunk + 9;
  auto seg = SealableSegment(Metric::kL2, kDim, kRows, kChunk);
  auto encoded = EncodeSealedSegment(MetaOf(*seg), seg->Snapshot());
  ASSERT_TRUE(encoded.ok()) << encoded.status();
  SharedBytes object = SharedBytes::Of(*encoded);
  const char* begin = object.bytes.data();
  const char* end = begin + object.bytes.size();
  const auto inside = [&](const void* p) {
    return static_cast<const char*>(p) >= begin && static_cast<const char*>(p) < end;
  };
  std::weak_ptr<const void> held = object.owner;
  // As a mapping: the account holds the delete column and row maps, not the object's bytes.
  object.mapped = true;
  auto account = std::make_shared<MemoryAccount>();
  auto decoded = DecodeSealedSegment(std::move(object), "o", account);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_FALSE(held.expired());
  EXPECT_EQ(account->bytes(), (kRows - 9) * (8 + 4 + 4) + 9 * (8 + 4));
  SegmentSnapshot snap = decoded->snapshot();
  ASSERT_EQ(snap.chunks.size(), 3u);
  for (size_t c = 0; c < snap.chunks.size(); ++c) {
    const Chunk& chunk = *snap.chunks[c];
    EXPECT_TRUE(inside(&chunk.vector(0)[0])) << c;
    EXPECT_TRUE(inside(&chunk.vector(snap.RowsIn(c) - 1)[0])) << c;
    if (chunk.index() != nullptr) {
      EXPECT_TRUE(inside(chunk.index()->parts().list_vectors.data())) << c;
      EXPECT_TRUE(inside(chunk.index()->parts().centroids.data())) << c;
    }
  }
  // Row r's vector is row r's, although a full chunk stores them in its lists' order.
  const SegmentSnapshot original = seg->Snapshot();
  for (size_t r = 0; r < kChunk; ++r) {
    ASSERT_TRUE(std::equal(original.chunks[0]->vector(r), original.chunks[0]->vector(r) + kDim,
                           snap.chunks[0]->vector(r)))
        << r;
  }
  decoded->chunks.clear();
  EXPECT_FALSE(held.expired());  // `snap` still holds the chunks
  snap.chunks.clear();
  EXPECT_TRUE(held.expired());
}

// Untrusted bytes: every single-byte change, every truncation and any trailing byte is
// DATA_LOSS naming the object — never a segment decoded from damaged bytes.
TEST(SealedSegmentTest, EveryDamagedByteAndEveryTruncationIsDataLossNamingTheObject) {
  auto seg = SealableSegment(Metric::kL2, 4, 2 * 64 + 5, 64);
  auto bytes = EncodeSealedSegment(MetaOf(*seg), seg->Snapshot());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_TRUE(DecodeSealedSegment(*bytes, "o", nullptr).ok());
  auto expect_data_loss = [](const std::string& damaged, const std::string& what) {
    auto d = DecodeSealedSegment(damaged, "bucket/segments/42", nullptr);
    ASSERT_FALSE(d.ok()) << what;
    EXPECT_EQ(GetStreamingCode(d.status()), StreamingCode::kDataLoss) << what << d.status();
    EXPECT_THAT(std::string(d.status().message()), ::testing::HasSubstr("bucket/segments/42"));
  };
  for (size_t at = 0; at < bytes->size(); ++at) {
    std::string damaged = *bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x20);
    expect_data_loss(damaged, "byte " + std::to_string(at) + " changed");
    if (HasFailure()) return;
  }
  for (size_t n = 0; n < bytes->size(); ++n) {
    expect_data_loss(bytes->substr(0, n), "truncated to " + std::to_string(n));
    if (HasFailure()) return;
  }
  expect_data_loss(*bytes + "x", "a trailing byte");
}

// A NaN that kept its checksum (written so) is refused too: a search must never meet one.
TEST(SealedSegmentTest, ANonFiniteVectorIsDataLoss) {
  auto seg = SealableSegment(Metric::kL2, 4, 10, 64);
  auto bytes = EncodeSealedSegment(MetaOf(*seg), seg->Snapshot());
  ASSERT_TRUE(bytes.ok());
  // The first chunk's first vector: after its 8-byte length, rows and nlist, 3 columns of 10
  // (the header is padded to a multiple of 8).
  const size_t header = (16 + DecodeFixed32(bytes->data() + 12) + 4 + 7) / 8 * 8;
  const size_t vector = header + 8 + 8 + 3 * 10 * 8;
  const float nan = std::nanf("");
  std::memcpy(bytes->data() + vector, &nan, sizeof nan);
  auto d = DecodeSealedSegment(WithMatchingChecksums(*bytes), "o", nullptr);
  EXPECT_EQ(GetStreamingCode(d.status()), StreamingCode::kDataLoss) << d.status();
  EXPECT_THAT(std::string(d.status().message()), ::testing::HasSubstr("not finite"));
}

TEST(SealedSegmentTest, AnotherVersionIsRefusedByName) {
  auto seg = SealableSegment(Metric::kL2, 4, 10, 64);
  auto bytes = EncodeSealedSegment(MetaOf(*seg), seg->Snapshot());
  ASSERT_TRUE(bytes.ok());
  for (int version : {1, 3}) {                 // format 1 stored the lists' vectors in row order
    (*bytes)[8] = static_cast<char>(version);  // the version field
    auto d = DecodeSealedSegment(*bytes, "o", nullptr);
    EXPECT_THAT(
        std::string(d.status().message()),
        ::testing::HasSubstr(absl::StrCat("format version ", version, " (this build reads 2)")));
  }
}

// The fuzz body on valid objects (with and without indexes, empty) and their mutations, with the
// checksums fixed up so that mutants reach the structural checks.
TEST(SealedSegmentTest, FuzzBodyOnSeedsAndMutations) {
  std::vector<std::string> seeds = {""};
  for (auto [rows, chunk] : {std::pair<size_t, size_t>{0, 8}, {3, 8}, {2 * 64 + 5, 64}}) {
    auto seg = SealableSegment(Metric::kIP, 4, rows, chunk);
    seeds.push_back(*EncodeSealedSegment(MetaOf(*seg), seg->Snapshot()));
  }
  seeds.push_back(*EncodeDeleteLog(42, std::vector<DeleteRecord>{{1, 5}, {-3, 5}, {9, 7}}));
  seeds.push_back(*EncodeDeleteLog(0, {}));
  for (const std::string& s : seeds) RunSealedSegmentFuzzInput(s);
  kf::testing::ForEachMutation(seeds, /*rng_seed=*/20261204, 3000, /*alphabet=*/"",
                               [](const std::string& s) { RunSealedSegmentFuzzInput(s); });
}

TEST(DeleteLogTest, RoundTripsAndRefusesDamageByName) {
  const std::vector<DeleteRecord> records = {{1, 5}, {-3, 5}, {9, 7}};
  auto bytes = EncodeDeleteLog(42, records);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  auto log = DecodeDeleteLog(*bytes, "o");
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->segment_id, 42);
  EXPECT_EQ(log->records, records);
  for (size_t at = 0; at < bytes->size(); ++at) {
    std::string damaged = *bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 1);
    auto d = DecodeDeleteLog(damaged, "segments/42.del.5");
    ASSERT_FALSE(d.ok()) << "byte " << at;
    EXPECT_EQ(GetStreamingCode(d.status()), StreamingCode::kDataLoss);
    EXPECT_THAT(std::string(d.status().message()), ::testing::HasSubstr("segments/42.del.5"));
  }
  for (size_t n = 0; n < bytes->size(); ++n)
    EXPECT_FALSE(DecodeDeleteLog(bytes->substr(0, n), "o").ok());
  // Records out of apply order are refused on both sides.
  EXPECT_FALSE(EncodeDeleteLog(1, std::vector<DeleteRecord>{{1, 7}, {2, 5}}).ok());
}

}  // namespace
}  // namespace kf::search
