// Vectors: a dense row-major float32 matrix read from a file for `kfctl insert`
// (npy_reader.h, csv_reader.h).
//
// Thread-safety: a plain value. Ownership: owns its values. Errors: none here; the readers
// guarantee rows >= 1, 1 <= dim <= kMaxDim, values.size() == rows * dim, every value finite.
#pragma once

#include <cstdint>
#include <vector>

namespace kf::cli {

struct Vectors {
  uint64_t rows = 0;
  uint32_t dim = 0;
  std::vector<float> values;  // row r is values[r * dim, (r + 1) * dim)
};

}  // namespace kf::cli
