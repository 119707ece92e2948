// ParseNpy: a strict reader of NumPy .npy files holding the vectors of `kfctl insert --file`
// (docs/collections-client.md "Vector files").
//
// Accepted: format versions 1.0, 2.0 and 3.0; a header dict with exactly the keys 'descr',
// 'fortran_order' and 'shape'; descr '<f4' (float32 little-endian) or '<f8' (float64
// little-endian, converted to float32); fortran_order False; shape (rows, dim) with rows >= 1
// and 1 <= dim <= 32768; exactly rows * dim * itemsize data bytes after the header; every value
// finite (and, for '<f8', within float32 range). Anything else is rejected: the bytes come
// from the user, and a silently misread matrix would insert wrong vectors.
//
// Thread-safety: a pure function. Errors: INVALID_ARGUMENT naming the problem (bad magic,
// unsupported version, truncated header, malformed header dict, wrong dtype, fortran order,
// wrong rank, data shorter or longer than the shape says, a non-finite value with its row and
// column).
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "cli/vectors.h"

namespace kf::cli {

absl::StatusOr<Vectors> ParseNpy(std::string_view bytes);

}  // namespace kf::cli
