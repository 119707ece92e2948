#include "query/query_metrics.h"

namespace kf::query {

std::vector<metrics::CallbackHandle> RegisterQueryGauges(metrics::Registry& registry,
                                                         const QueryRegistry* queries) {
  std::vector<metrics::CallbackHandle> handles;
  handles.push_back(registry.AddGaugeCallback(
      "kf_growing_bytes", "Memory of the growing segments of a pchannel's shards", {"pchannel"},
      [queries](metrics::GaugeEmitter& e) {
        for (const auto& p : queries->Stats()) {
          e.Emit({p.pchannel}, static_cast<double>(p.growing_bytes));
        }
      }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_growing_rows", "Rows in the growing segments of a pchannel's shards", {"pchannel"},
      [queries](metrics::GaugeEmitter& e) {
        for (const auto& p : queries->Stats()) {
          e.Emit({p.pchannel}, static_cast<double>(p.growing_rows));
        }
      }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_tsafe", "Applied timetick of a pchannel: searches at later timestamps wait for it",
      {"pchannel"}, [queries](metrics::GaugeEmitter& e) {
        for (const auto& p : queries->Stats()) e.Emit({p.pchannel}, static_cast<double>(p.tsafe));
      }));
  return handles;
}

}  // namespace kf::query
