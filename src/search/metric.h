// The distance kernels of vector search (docs/search.md): squared L2 and inner product over
// float32, vectorised with AVX2+FMA when the CPU has them (checked once at start) and portable
// otherwise. COSINE is the inner product of unit vectors: rows and queries are normalised once,
// when they enter, never per comparison.
//
// Inside the library every comparison is a *score*, lower is better (L2: the squared distance,
// IP and COSINE: the negated product), so one top-k keeps the best hits of every metric; what
// a user sees is DistanceOf(score): the squared L2 distance, the inner product or the cosine
// similarity, as Milvus reports them.
//
// Pure functions: thread-safe. Errors: none (the caller validates dims and finiteness).
#pragma once

#include <cstddef>
#include <string_view>

namespace kf::search {

enum class Metric { kL2, kIP, kCosine };

// "L2", "IP", "COSINE" (the schema's names; collection_rules.h parses them).
std::string_view MetricName(Metric metric);

// Sum over i of (a[i] - b[i])^2.
float L2Sqr(const float* a, const float* b, size_t dim);
// Sum over i of a[i] * b[i].
float InnerProduct(const float* a, const float* b, size_t dim);
// Scales `v` to unit length; a zero vector stays zero (its cosine with anything is 0).
void Normalize(float* v, size_t dim);

// The score of `row` for `query` (both as stored: normalised for COSINE); lower is better.
inline float Score(Metric metric, const float* query, const float* row, size_t dim) {
  return metric == Metric::kL2 ? L2Sqr(query, row, dim) : -InnerProduct(query, row, dim);
}
// The distance a user is shown for `score`.
inline float DistanceOf(Metric metric, float score) {
  return metric == Metric::kL2 ? score : -score;
}

// The kernels themselves, for loops that call one many times (no dispatch per call).
using Kernel = float (*)(const float* a, const float* b, size_t dim);
Kernel L2SqrKernel();
Kernel InnerProductKernel();

// Which kernels run on this CPU: "avx2" or "portable" (for benches and logs).
std::string_view KernelName();

}  // namespace kf::search
