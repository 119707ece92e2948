#include "query/query_metrics.h"

#include <string>

namespace kf::query {
namespace {

using PChannelValue = double (*)(const QueryRegistry::PChannelStats&);

// A gauge with one series per followed pchannel.
metrics::CallbackHandle PerPChannel(metrics::Registry& registry, const QueryRegistry* queries,
                                    const char* name, const char* help, PChannelValue value) {
  return registry.AddGaugeCallback(name, help, {"pchannel"},
                                   [queries, value](metrics::GaugeEmitter& e) {
                                     for (const auto& p : queries->Stats()) {
                                       e.Emit({p.pchannel}, value(p));
                                     }
                                   });
}

}  // namespace

std::vector<metrics::CallbackHandle> RegisterQueryGauges(metrics::Registry& registry,
                                                         const QueryRegistry* queries) {
  using Stats = QueryRegistry::PChannelStats;
  std::vector<metrics::CallbackHandle> handles;
  handles.push_back(
      PerPChannel(registry, queries, "kf_growing_bytes",
                  "Memory of the segments (growing and sealed) a pchannel's shards hold",
                  [](const Stats& p) { return static_cast<double>(p.growing_bytes); }));
  handles.push_back(
      PerPChannel(registry, queries, "kf_growing_rows",
                  "Rows in the segments (growing and sealed) of a pchannel's shards",
                  [](const Stats& p) { return static_cast<double>(p.growing_rows); }));
  handles.push_back(
      PerPChannel(registry, queries, "kf_tsafe",
                  "Applied timetick of a pchannel: searches at later timestamps wait for it",
                  [](const Stats& p) { return static_cast<double>(p.tsafe); }));
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
      "Sealed segments of a collection on this node, by state: flushed to the object store or "
      "not yet",
      {"collection_id", "state"}, [queries](metrics::GaugeEmitter& e) {
        for (const auto& c : queries->CollectionsStats()) {
          const std::string id = std::to_string(c.collection_id);
          e.Emit({id, "flushed"}, static_cast<double>(c.flushed_segments));
          e.Emit({id, "unflushed"}, static_cast<double>(c.sealed_segments - c.flushed_segments));
        }
      }));
  // Recovery storage (docs/recovery-storage.md), per followed pchannel.
  handles.push_back(PerPChannel(
      registry, queries, "kf_checkpoint_timetick",
      "Timetick of a pchannel's last committed checkpoint (0: none since it was opened here)",
      [](const Stats& p) { return static_cast<double>(p.checkpoint.committed_ts); }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_checkpoint_lag_seconds",
      "How far a pchannel's last checkpoint is behind what is applied (a restart replays this)",
      {"pchannel"}, [queries](metrics::GaugeEmitter& e) {
        for (const auto& p : queries->Stats()) {
          if (auto lag = p.checkpoint_lag_seconds()) e.Emit({p.pchannel}, *lag);
        }
      }));
  handles.push_back(PerPChannel(
      registry, queries, "kf_checkpoint_lag_messages",
      "Messages a pchannel applied since its last committed checkpoint was planned (a restart "
      "replays about this many beyond it)",
      [](const Stats& p) { return static_cast<double>(p.checkpoint.lag_messages()); }));
  handles.push_back(
      PerPChannel(registry, queries, "kf_checkpoints",
                  "Checkpoints a pchannel committed since it was opened here",
                  [](const Stats& p) { return static_cast<double>(p.checkpoint.commits); }));
  handles.push_back(PerPChannel(
      registry, queries, "kf_checkpoint_failures",
      "Checkpoint writes of a pchannel that failed (and were tried again) since it was opened here",
      [](const Stats& p) { return static_cast<double>(p.checkpoint.failures); }));
  handles.push_back(
      PerPChannel(registry, queries, "kf_wal_truncations",
                  "Truncations of a pchannel's WAL below its checkpoint since it was opened here",
                  [](const Stats& p) { return static_cast<double>(p.checkpoint.truncations); }));
  handles.push_back(PerPChannel(
      registry, queries, "kf_recovered_segments",
      "Sealed segments a pchannel loaded from its checkpoint when it was opened here",
      [](const Stats& p) { return static_cast<double>(p.checkpoint.loaded_segments); }));
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
      "kf_memory_limit_bytes",
      "memory_limit: the process stays under it; Inserts are refused from 90% of it (0: none)", {},
      [queries](metrics::GaugeEmitter& e) {
        e.Emit({}, static_cast<double>(queries->memory_limit()));
      }));
  handles.push_back(registry.AddGaugeCallback(
      "kf_index_queue", "Full growing chunks waiting for their IVF index or being indexed", {},
      [queries](metrics::GaugeEmitter& e) {
        e.Emit({}, static_cast<double>(queries->index_queue()));
      }));
  return handles;
}

}  // namespace kf::query
