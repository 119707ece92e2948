// The body of the sealed_segment_fuzz libFuzzer target, shared with search_test so that CI
// exercises it with GCC on seeds and deterministic mutations.
//
// It decodes the input as a sealed segment object as is, and again with every CRC the input's
// framing points at rewritten to match (so mutations reach the checks behind the checksums);
// and as a delete log, as is and with its CRC rewritten. Invariants: a refused object is
// DATA_LOSS; an accepted one encodes back to exactly the bytes it was decoded from. A violated
// invariant aborts (the fuzzer reports a crash; the test dies).
// Thread-safe: no shared state.
#pragma once

#include <string>
#include <string_view>

namespace kf::search {

void RunSealedSegmentFuzzInput(std::string_view data);

// `data` with the header's and each chunk's CRC rewritten to match their bytes, as far as the
// framing (lengths) can be followed.
std::string WithMatchingChecksums(std::string_view data);

}  // namespace kf::search
