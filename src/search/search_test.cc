#include <algorithm>
#include <atomic>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "search/flat_search.h"
#include "search/growing_segment.h"
#include "search/metric.h"
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
    SearchSnapshot(seg.Snapshot(), Metric::kL2, 2, q, {.ts = ts}, &top);
    return top.Take();
  };
  EXPECT_THAT(search(15), ElementsAre(Hit{0, 2}, Hit{2, 1}, Hit{2, 3}));
  EXPECT_THAT(search(20), ElementsAre(Hit{2, 1}, Hit{2, 3}));
  EXPECT_THAT(search(30), ElementsAre(Hit{2, 1}, Hit{2, 3}, Hit{50, 2}));
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
  SearchSnapshot(seg.Snapshot(), Metric::kCosine, 2, q, {.ts = 1}, &top);
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
      SearchSnapshot(seg.Snapshot(), metric, kDim, query.data(), filter, &got);
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

}  // namespace
}  // namespace kf::search
