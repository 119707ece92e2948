// ReadVectorFile: the vectors of `kfctl insert --file`, read whole into memory and parsed by
// extension: ".npy" (npy_reader.h) or ".csv" (csv_reader.h), in any letter case.
//
// Thread-safety: a pure function (reads the file). Errors: INVALID_ARGUMENT for another
// extension or a malformed file; the errno's code (NOT_FOUND, PERMISSION_DENIED, ...) when
// the file cannot be read. Every message starts with the path.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "cli/vectors.h"

namespace kf::cli {

absl::StatusOr<Vectors> ReadVectorFile(const std::string& path);

}  // namespace kf::cli
