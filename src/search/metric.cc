#include "search/metric.h"

#include <immintrin.h>

#include <cmath>

namespace kf::search {
namespace {

// Four independent accumulators: the compiler keeps them in registers and the additions do
// not wait on each other (a float reduction is not reassociated without -ffast-math).
float L2SqrPortable(const float* a, const float* b, size_t dim) {
  float acc[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= dim; i += 4) {
    for (size_t j = 0; j < 4; ++j) {
      const float d = a[i + j] - b[i + j];
      acc[j] += d * d;
    }
  }
  float sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (; i < dim; ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
  return sum;
}

float InnerProductPortable(const float* a, const float* b, size_t dim) {
  float acc[4] = {0, 0, 0, 0};
  size_t i = 0;
  for (; i + 4 <= dim; i += 4) {
    for (size_t j = 0; j < 4; ++j) acc[j] += a[i + j] * b[i + j];
  }
  float sum = (acc[0] + acc[1]) + (acc[2] + acc[3]);
  for (; i < dim; ++i) sum += a[i] * b[i];
  return sum;
}

__attribute__((target("avx2,fma"))) float HorizontalSum(__m256 v) {
  const __m128 lo = _mm256_castps256_ps128(v);
  const __m128 hi = _mm256_extractf128_ps(v, 1);
  __m128 s = _mm_add_ps(lo, hi);
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma"))) float L2SqrAvx2(const float* a, const float* b, size_t dim) {
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= dim; i += 16) {
    const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    const __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8));
    acc0 = _mm256_fmadd_ps(d0, d0, acc0);
    acc1 = _mm256_fmadd_ps(d1, d1, acc1);
  }
  for (; i + 8 <= dim; i += 8) {
    const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i));
    acc0 = _mm256_fmadd_ps(d, d, acc0);
  }
  float sum = HorizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < dim; ++i) sum += (a[i] - b[i]) * (a[i] - b[i]);
  return sum;
}

__attribute__((target("avx2,fma"))) float InnerProductAvx2(const float* a, const float* b,
                                                           size_t dim) {
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  size_t i = 0;
  for (; i + 16 <= dim; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= dim; i += 8) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  }
  float sum = HorizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < dim; ++i) sum += a[i] * b[i];
  return sum;
}

struct Kernels {
  float (*l2)(const float*, const float*, size_t);
  float (*ip)(const float*, const float*, size_t);
  std::string_view name;
};

Kernels Choose() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return {L2SqrAvx2, InnerProductAvx2, "avx2"};
  }
  return {L2SqrPortable, InnerProductPortable, "portable"};
}

const Kernels& Chosen() {
  static const Kernels kernels = Choose();
  return kernels;
}

}  // namespace

std::string_view MetricName(Metric metric) {
  switch (metric) {
    case Metric::kL2:
      return "L2";
    case Metric::kIP:
      return "IP";
    case Metric::kCosine:
      return "COSINE";
  }
  return "UNKNOWN";
}

float L2Sqr(const float* a, const float* b, size_t dim) { return Chosen().l2(a, b, dim); }

float InnerProduct(const float* a, const float* b, size_t dim) { return Chosen().ip(a, b, dim); }

void Normalize(float* v, size_t dim) {
  const float norm = std::sqrt(InnerProduct(v, v, dim));
  if (norm == 0) return;
  for (size_t i = 0; i < dim; ++i) v[i] /= norm;
}

Kernel L2SqrKernel() { return Chosen().l2; }

Kernel InnerProductKernel() { return Chosen().ip; }

std::string_view KernelName() { return Chosen().name; }

}  // namespace kf::search
