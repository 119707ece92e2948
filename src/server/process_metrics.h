// Process-level metrics of a `kingfisher run <role>` process (docs/operations.md):
//   kf_build_info{version}          1; the version is the CMake project version
//   kf_process_start_time_seconds   Unix time the process started, in seconds
//   kf_process_resident_memory_bytes   its resident memory (VmRSS), at scrape
//   kf_process_anonymous_memory_bytes  the same but for mapped files (what memory_limit bounds)
// Call once at startup and keep the handles it returns for the life of the process.
//
// Thread-safety: thread-safe. Ownership: the values live in `registry`.
#pragma once

#include <string_view>
#include <vector>

#include "common/metrics/registry.h"

namespace kf::server {

// The version the binary was built as.
std::string_view BuildVersion();

[[nodiscard]] std::vector<metrics::CallbackHandle> RegisterProcessMetrics(
    metrics::Registry& registry);

}  // namespace kf::server
