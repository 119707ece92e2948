// ParseCsv: a strict reader of the CSV vector files of `kfctl insert --file`
// (docs/collections-client.md "Vector files").
//
// One vector per line, its values separated by ','; lines end with "\n" (or "\r\n"), the last
// one optionally. Spaces and tabs around a value are ignored. A value is a decimal float
// ([+-]digits[.digits][e[+-]digits], e.g. "1", "-0.5", ".5", "1e-3") that is finite in float32;
// "nan", "inf", hex floats and anything else are rejected. Every line has the width of the
// first (1..32768 values). Blank lines are rejected, not skipped: in a file of vectors they
// mean a broken export, and skipping them would shift every later row's line number. No header
// line, no quoting.
//
// Thread-safety: a pure function. Errors: INVALID_ARGUMENT "line N[, value C]: problem" (both
// 1-based), or "no rows" for an empty input.
#pragma once

#include <string_view>

#include "absl/status/statusor.h"
#include "cli/vectors.h"

namespace kf::cli {

absl::StatusOr<Vectors> ParseCsv(std::string_view text);

}  // namespace kf::cli
