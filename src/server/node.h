// RunNode: the streaming-node role (`kingfisher run node --etcd URLS --node-id N`), see
// docs/cluster.md "Streaming node".
//
// Startup: logging, data dir checks and the node directory lock (`<data-dir>/nodes/<id>/`; the
// WAL under `<data-dir>/wal/` is shared with the other nodes), tracing, the etcd client, the
// assignment view (retried with backoff and a log line per attempt while etcd is unreachable —
// no crash loop; a signal stops the retries), the gRPC server (StreamingNode + StreamingCoord
// discovery/status from the node's own view) and HTTP, then registration: from then on the node
// opens the WALs assigned to it. Timeticks come from the coordinator's oracle in batches.
// Shutdown on the first SIGTERM/SIGINT: drain (the node turns DRAINING, the coordinator moves
// its pchannels, bounded by drain_timeout_seconds), stop serving, close the WALs, revoke the
// lease, flush traces, return 0.
//
// Returns the process exit code: 0 after a graceful shutdown, 1 when startup fails for a reason
// retrying cannot fix (bad config, data dir locked by another process).
#pragma once

#include "server/config.h"
#include "server/signals.h"

namespace kf::server {

int RunNode(const ServerConfig& config, ShutdownSignals* signals);

}  // namespace kf::server
