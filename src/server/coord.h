// RunCoord: the coordinator role (`kingfisher run coord`, docs/cluster.md "Coordinator") over
// etcd (--etcd).
//
// Startup: logging, the HTTP health port, then the etcd client and the Coordinator (the
// cluster listed into its AssignmentView). While etcd cannot be reached the process retries
// with backoff and logs one line per attempt (no crash loop; SIGTERM still ends it). Then the
// gRPC server (StreamingCoord only) starts and the coordinator enters the election, publishing
// the bound address. Once running, etcd outages are logged and survived (the coordinator stops
// acting while it cannot confirm its lease and resumes afterwards).
// Shutdown on the first SIGTERM/SIGINT: the coordinator steps down (its lease is revoked, so a
// standby is elected at once), watch streams end, return 0.
//
// Returns the process exit code: 0 after a graceful shutdown, 1 when a local resource fails
// (an address cannot be bound), 2 for a configuration error (no or malformed --etcd).
#pragma once

#include "server/config.h"
#include "server/signals.h"

namespace kf::server {

int RunCoord(const ServerConfig& config, ShutdownSignals* signals);

}  // namespace kf::server
