// Scrape-time gauges over a QueryRegistry (callback gauges, common/metrics/registry.h),
// registered by whoever owns the registry (the standalone server, the streaming node):
//   kf_growing_bytes{pchannel}  memory of the growing segments (rows, indexes) of its shards
//   kf_growing_rows{pchannel}   rows in them (deleted ones included until they are sealed)
//   kf_growing_collection_bytes{collection_id,kind}  a collection's rows / index memory here
//   kf_growing_memory_bytes, kf_growing_memory_limit_bytes  the node's total and its limit
//   kf_index_queue  full chunks waiting for their IVF index or being indexed
//   kf_tsafe{pchannel}          the pchannel's applied timetick (docs/search.md): a search at a
//                               later timestamp waits for it
//
// Thread-safety: thread-safe. Ownership: the handles unregister the gauges when destroyed;
// `queries` is borrowed and must outlive them.
#pragma once

#include <vector>

#include "common/metrics/registry.h"
#include "query/query_registry.h"

namespace kf::query {

[[nodiscard]] std::vector<metrics::CallbackHandle> RegisterQueryGauges(
    metrics::Registry& registry, const QueryRegistry* queries);

}  // namespace kf::query
