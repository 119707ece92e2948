// The body of the vector_file_fuzz libFuzzer target, shared with vector_file_fuzz_test so that
// CI exercises it with GCC on hand-made inputs and deterministic mutations.
//
// It feeds the input to ParseNpy and ParseCsv as a whole file, to ParseNpy as the header dict
// of an otherwise valid file and as the data of a valid header, and checks their invariants:
// an accepted matrix has rows >= 1, 1 <= dim <= kMaxDim, rows * dim finite values, and
// re-encoding it (as '<f4' .npy, as CSV with 9 significant digits) parses back to the same
// bits. A violated invariant aborts (the fuzzer reports a crash; the test dies).
// Thread-safe: no shared state.
#pragma once

#include <string_view>

namespace kf::cli {

void RunVectorFileFuzzInput(std::string_view data);

}  // namespace kf::cli
