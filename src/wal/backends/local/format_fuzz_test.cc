// Runs the on-disk format fuzz body over valid encodings and deterministic mutations of them
// (truncations, bit flips, splices), so CI checks the parsers' invariants without libFuzzer.
#include <random>
#include <string>
#include <vector>

#include "format/record_batch.h"
#include "gtest/gtest.h"
#include "wal/backends/local/format_fuzz_body.h"
#include "wal/backends/local/layout.h"

namespace kf::wal::local {
namespace {

std::vector<std::string> Seeds() {
  std::string segment;
  format::BatchBuilder b;
  b.Begin(&segment, 0);
  b.Add("first");
  b.Add("");
  b.Add(std::string(300, 'x'));
  b.Finish();
  b.Begin(&segment, 3);
  b.Add("second batch");
  b.Finish();
  return {segment,
          SegmentFileName(42, Term(7)),
          TermFileName(Term(9)),
          EncodeSealRecord(
              {.sealed_term = Term(3), .segment_base = 10, .length = 99, .end_offset = 12}),
          "",
          std::string(64, '\0')};
}

TEST(FormatFuzz, SeedsAndMutationsKeepTheInvariants) {
  std::mt19937 rng(1234);
  for (const std::string& seed : Seeds()) {
    RunFormatFuzzInput(seed);
    for (size_t cut = 0; cut < seed.size(); cut += 7) RunFormatFuzzInput(seed.substr(0, cut));
    for (int i = 0; i < 3000; ++i) {
      std::string m = seed;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !m.empty(); ++e) {
        size_t pos = rng() % m.size();
        switch (rng() % 3) {
          case 0:
            m[pos] = static_cast<char>(m[pos] ^ (1 << (rng() % 8)));
            break;
          case 1:
            m.erase(pos, 1 + rng() % 8);
            break;
          default:
            m.insert(pos, seed.substr(rng() % seed.size(), 1 + rng() % 16));
            break;
        }
      }
      RunFormatFuzzInput(m);
    }
  }
}

}  // namespace
}  // namespace kf::wal::local
