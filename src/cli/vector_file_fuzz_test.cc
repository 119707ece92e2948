// Runs the vector file fuzz body over hand-made inputs and deterministic mutations of valid
// files, so its invariants are checked on every CI run, not only under clang/libFuzzer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli/npy_testing.h"
#include "cli/vector_file_fuzz_body.h"
#include "common/testing/seed_mutations.h"

namespace kf::cli {
namespace {

std::vector<std::string> Seeds() {
  using testing::Float64Bytes;
  using testing::NpyBytes;
  using testing::NpyDict;
  using testing::NpyF32;
  return {
      "",
      NpyF32(2, 3, {1, 2, 3, 4, 5, 6}),
      NpyF32(1, 1, {-0.0f}, 2),
      NpyF32(3, 1, {1e-45f, 3.4e38f, -1}, 3),
      NpyBytes(NpyDict("<f8", 1, 2), Float64Bytes({0.1, -2})),
      NpyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (1, 1), }", "\0\0\0\0"),
      NpyBytes("{'shape': (1,), 'descr': [('a', '<f4')]}", ""),
      "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }",
      "{\"shape\":(1,2)}",
      "(1, 2, )",
      "1,2,3\n4,5,6\n",
      "1.5e-3,-7\r\n.5,5.\r\n",
      " 1 , 2 \n",
      "1\n\n2\n",
      "nan,inf\n",
      "1e39,0x1p3\n",
      "\x93NUMPY\x01\x00\xff\xff",
      "\x93NUMPY\x02\x00\xff\xff\xff\xff{",
      std::string(70, ','),
      std::string("\x01\x01\0\0\x80\x3f", 6),
  };
}

TEST(VectorFileFuzzTest, Seeds) {
  for (const std::string& s : Seeds()) RunVectorFileFuzzInput(s);
}

TEST(VectorFileFuzzTest, DeterministicMutations) {
  // Inserted bytes from the formats' own characters, so mutants get past the first token.
  kf::testing::ForEachMutation(Seeds(), /*rng_seed=*/20250101, 20000,
                               /*alphabet=*/"0123456789,.e-+\n '()",
                               [](const std::string& s) { RunVectorFileFuzzInput(s); });
}

}  // namespace
}  // namespace kf::cli
