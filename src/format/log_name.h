// The one rule for naming a log (a pchannel's WAL) wherever the name becomes part of a path or
// an object key: the local backend's directory, the objectstore backend's key prefix, a
// logstore's directory and its segment objects' keys.
//
// Pure function: thread-safe. Errors: INVALID_ARGUMENT (StreamingCode kInvalidArgument).
#pragma once

#include <string_view>

#include "absl/status/status.h"

namespace kf::format {

// OK for 1..100 bytes of [A-Za-z0-9_.-] that do not start with '.' (so never "." or "..").
// Every pchannel name `<cluster>-dml_<i>` of a cluster name up to 90 bytes qualifies.
absl::Status ValidateLogName(std::string_view name);

}  // namespace kf::format
