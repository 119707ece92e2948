#include "trace/id_generator.h"

#include <cstring>
#include <random>

namespace kf::trace {
namespace {

// One generator per thread: no lock on the hot path. Seeded from the OS so that processes and
// threads never share a sequence.
std::mt19937_64& Rng() {
  thread_local std::mt19937_64 rng([] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd(), rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }());
  return rng;
}

uint64_t NonZeroRandom() {
  uint64_t v;
  do {
    v = Rng()();
  } while (v == 0);
  return v;
}

}  // namespace

TraceId GenerateTraceId() noexcept {
  TraceId id;
  uint64_t hi = Rng()();
  uint64_t lo = NonZeroRandom();  // the low half alone keeps the id valid
  std::memcpy(id.bytes.data(), &hi, 8);
  std::memcpy(id.bytes.data() + 8, &lo, 8);
  return id;
}

SpanId GenerateSpanId() noexcept {
  SpanId id;
  uint64_t v = NonZeroRandom();
  std::memcpy(id.bytes.data(), &v, 8);
  return id;
}

}  // namespace kf::trace
