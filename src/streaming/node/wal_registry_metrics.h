// Scrape-time gauges over a WalRegistry (callback gauges, common/metrics/registry.h), registered
// by whoever owns the registry (the standalone server, the streaming node):
//   kf_wal_size_bytes{pchannel}           bytes the WAL occupies in its backend (Wal::StoredBytes;
//                                         absent when the backend cannot tell)
//   kf_wal_readers{pchannel}              open readers (scanners) of the WAL
//   kf_pchannel_term{pchannel}            the term this node serves the pchannel at
//   kf_pchannel_assigned{pchannel,node}   1 for the node serving the pchannel
// The assignment pair is this node's view (`node_id`): what it serves right now.
//
// Thread-safety: thread-safe. The callbacks call wals->List() and Get() during a scrape, with
// the metrics registry's lock held: a WalRegistry must not open a Wal (which registers its
// metrics) while holding the lock its List/Get take. Ownership: the returned handles
// unregister the gauges when destroyed; `wals` is borrowed and must outlive them.
#pragma once

#include <cstdint>
#include <vector>

#include "common/metrics/registry.h"
#include "streaming/node/wal_registry.h"

namespace kf::streaming::node {

[[nodiscard]] std::vector<metrics::CallbackHandle> RegisterWalGauges(metrics::Registry& registry,
                                                                     const WalRegistry* wals,
                                                                     int64_t node_id);

}  // namespace kf::streaming::node
