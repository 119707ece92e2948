#include "trace/id_generator.h"

#include <cstdint>
#include <cstring>
#include <random>

namespace kf::trace {
namespace {

// One generator per thread: no lock on the hot path. SplitMix64 (Steele, Lea, Flood 2014):
// a 64-bit state stepped by a constant and mixed, statistically sound for ids, with no state
// array to refill as mt19937_64 has (which showed in the append path's profile: two spans per
// append draw three numbers). Seeded from the OS so that processes and threads never share a
// sequence.
class SplitMix64 {
 public:
  SplitMix64() {
    std::random_device rd;
    state_ = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  }
  uint64_t operator()() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t state_;
};

SplitMix64& Rng() {
  thread_local SplitMix64 rng;
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
