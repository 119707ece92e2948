#include "query/query_metrics.h"

#include <string>

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
  handles.push_back(registry.AddGaugeCallback(
      "kf_growing_collection_bytes",
      "Memory of a collection's growing data on this node, by kind: rows or index",
      {"collection_id", "kind"}, [queries](metrics::GaugeEmitter& e) {
        for (const auto& c : queries->CollectionsStats()) {
          const std::string id = std::to_string(c.collection_id);
          e.Emit({id, "rows"}, static_cast<double>(c.growing_bytes));
          e.Emit({id, "index"}, static_cast<double>(c.index_bytes));
        }
      }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_sealed_segments",
      "Sealed segments of a collection on this node (in memory until recovery storage flushes "
      "them)",
      {"collection_id"}, [queries](metrics::GaugeEmitter& e) {
        for (const auto& c : queries->CollectionsStats()) {
          e.Emit({std::to_string(c.collection_id)}, static_cast<double>(c.sealed_segments));
        }
      }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_growing_memory_bytes",
      "Growing data (rows and indexes) this node holds; Inserts are refused at the limit", {},
      [queries](metrics::GaugeEmitter& e) {
        e.Emit({}, static_cast<double>(queries->growing_bytes()));
      }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_growing_memory_limit_bytes", "growing_memory_limit: Inserts are refused above it", {},
      [queries](metrics::GaugeEmitter& e) {
        e.Emit({}, static_cast<double>(queries->growing_memory_limit()));
      }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_index_queue", "Full growing chunks waiting for their IVF index or being indexed", {},
      [queries](metrics::GaugeEmitter& e) {
        e.Emit({}, static_cast<double>(queries->index_queue()));
      }));
  return handles;
}

}  // namespace kf::query
