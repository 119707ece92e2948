#include "server/process_metrics.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"

#ifndef KF_VERSION
#define KF_VERSION "unknown"
#endif

namespace kf::server {

std::string_view BuildVersion() { return KF_VERSION; }

void RegisterProcessMetrics(metrics::Registry& registry) {
  registry.GetGauge("kf_build_info", "Always 1; the labels say which build is running", {"version"})
      .With({BuildVersion()})
      ->Set(1);
  // Now is close enough to the exec: this runs before any real work starts.
  registry
      .GetGauge("kf_process_start_time_seconds", "Start time of the process since the Unix epoch")
      .With({})
      ->Set(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
}

}  // namespace kf::server
