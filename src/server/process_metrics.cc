#include "server/process_metrics.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/process_memory.h"

#ifndef KF_VERSION
#define KF_VERSION "unknown"
#endif

namespace kf::server {

std::string_view BuildVersion() { return KF_VERSION; }

std::vector<metrics::CallbackHandle> RegisterProcessMetrics(metrics::Registry& registry) {
  registry.GetGauge("kf_build_info", "Always 1; the labels say which build is running", {"version"})
      .With({BuildVersion()})
      ->Set(1);
  // Now is close enough to the exec: this runs before any real work starts.
  registry
      .GetGauge("kf_process_start_time_seconds", "Start time of the process since the Unix epoch")
      .With({})
      ->Set(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
  // Both: mapped segment objects are resident (file pages) but not the process's own.
  std::vector<metrics::CallbackHandle> handles;
  handles.push_back(registry.AddGaugeCallback(
      "kf_process_resident_memory_bytes",
      "Resident memory of the process (VmRSS), mapped segment objects included", {},
      [](metrics::GaugeEmitter& e) { e.Emit({}, static_cast<double>(ReadResidentBytes())); }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_process_anonymous_memory_bytes",
      "Resident memory of the process but for mapped files (RssAnon); Inserts are refused "
      "from 90% of memory_limit",
      {}, [](metrics::GaugeEmitter& e) { e.Emit({}, static_cast<double>(ReadAnonymousBytes())); }));
  return handles;
}

}  // namespace kf::server
