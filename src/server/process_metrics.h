// Process-level metrics of a `kingfisher run <role>` process (docs/operations.md):
//   kf_build_info{version}          1; the version is the CMake project version
//   kf_process_start_time_seconds   Unix time the process started, in seconds
//   kf_process_resident_memory_bytes  its resident memory (what memory_limit bounds), at scrape
// Call once at startup and keep the handle it returns for the life of the process.
//
// Thread-safety: thread-safe. Ownership: the values live in `registry`.
#pragma once

#include <string_view>

#include "common/metrics/registry.h"

namespace kf::server {

// The version the binary was built as.
std::string_view BuildVersion();

[[nodiscard]] metrics::CallbackHandle RegisterProcessMetrics(metrics::Registry& registry);

}  // namespace kf::server
