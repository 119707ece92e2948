// ForEachMutation: deterministic mutations of fuzz seeds, for the GoogleTests that run a fuzz
// body on every CI run (CI builds with GCC; the libFuzzer targets need clang). Each input is a
// seed with 1 to 4 random edits: a byte overwritten, a truncation, a byte inserted, another
// seed appended.
//
// Header-only, no library. Thread-compatible: each call has its own generator. Ownership: none
// kept. Errors: none of its own; `run` checks its invariants and dies on a violation.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace kf::testing {

// Calls `run(input)` on `count` mutations of `seeds` (not empty), drawn from a std::mt19937
// seeded with `rng_seed` so that every run, and a failure's rerun, sees the same inputs. An
// inserted byte is one of `alphabet`, or any byte when `alphabet` is empty (a text format's
// parser gets further with its own characters).
template <typename Run>
void ForEachMutation(const std::vector<std::string>& seeds, uint32_t rng_seed, int count,
                     std::string_view alphabet, Run&& run) {
  std::mt19937 rng(rng_seed);
  for (int i = 0; i < count; ++i) {
    std::string s = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      switch (rng() % 4) {
        case 0:
          if (!s.empty()) s[rng() % s.size()] = static_cast<char>(rng());
          break;
        case 1:
          if (!s.empty()) s.resize(rng() % s.size());
          break;
        case 2:
          s.insert(s.begin() + static_cast<std::ptrdiff_t>(s.empty() ? 0 : rng() % s.size()),
                   alphabet.empty() ? static_cast<char>(rng()) : alphabet[rng() % alphabet.size()]);
          break;
        case 3:
          s += seeds[rng() % seeds.size()];
          break;
      }
    }
    run(s);
  }
}

}  // namespace kf::testing
