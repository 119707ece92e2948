// Test helpers: .npy files built by hand (as numpy.save writes them) for the reader's tests,
// its fuzz body and kfctl's tests. Not a general .npy writer.
//
// Thread-safety: pure functions. Errors: none (any bytes can be built, valid or not).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kf::cli::testing {

// "\x93NUMPY", version major.0, the header length (2 bytes in v1, 4 in v2/v3), `dict` padded
// with spaces and a final '\n' so that the data starts at a multiple of 64, then `data`.
std::string NpyBytes(std::string_view dict, std::string_view data, int major = 1);

// The header dict numpy writes for a C-order 2-D array of `descr`.
std::string NpyDict(std::string_view descr, uint64_t rows, uint64_t dim);

// Little-endian bytes of each value.
std::string Float32Bytes(const std::vector<float>& values);
std::string Float64Bytes(const std::vector<double>& values);

// A (rows, dim) '<f4' array of `values`.
std::string NpyF32(uint64_t rows, uint32_t dim, const std::vector<float>& values, int major = 1);

}  // namespace kf::cli::testing
