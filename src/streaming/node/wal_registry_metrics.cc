#include "streaming/node/wal_registry_metrics.h"

#include <string>

namespace kf::streaming::node {

std::vector<metrics::CallbackHandle> RegisterWalGauges(metrics::Registry& registry,
                                                       const WalRegistry* wals, int64_t node_id) {
  std::vector<metrics::CallbackHandle> handles;
  handles.push_back(registry.AddGaugeCallback(
      "kf_wal_size_bytes", "Bytes the WAL of a pchannel occupies in its backend", {"pchannel"},
      [wals](metrics::GaugeEmitter& e) {
        for (const WalRegistry::PChannelInfo& p : wals->List()) {
          auto wal = wals->Get(p.pchannel);
          if (!wal.ok()) continue;  // removed since List
          if (auto bytes = (*wal)->StoredBytes()) {
            e.Emit({p.pchannel}, static_cast<double>(*bytes));
          }
        }
      }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_wal_readers", "Open readers (scanners) of the WAL of a pchannel", {"pchannel"},
      [wals](metrics::GaugeEmitter& e) {
        for (const WalRegistry::PChannelInfo& p : wals->List()) e.Emit({p.pchannel}, p.readers);
      }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_pchannel_term", "Term at which the pchannel is served (grows on every reassignment)",
      {"pchannel"}, [wals](metrics::GaugeEmitter& e) {
        for (const WalRegistry::PChannelInfo& p : wals->List()) {
          e.Emit({p.pchannel}, static_cast<double>(p.term.value()));
        }
      }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_pchannel_assigned", "1 for the node that serves the pchannel", {"pchannel", "node"},
      [wals, node = std::to_string(node_id)](metrics::GaugeEmitter& e) {
        for (const WalRegistry::PChannelInfo& p : wals->List()) e.Emit({p.pchannel, node}, 1);
      }));
  return handles;
}

}  // namespace kf::streaming::node
