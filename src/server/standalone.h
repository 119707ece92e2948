// RunStandalone: one process that is coordinator and streaming node for every pchannel
// (`kingfisher run standalone`).
//
// The roles of docs/cluster.md in one process, over the embedded metadata store in the data dir:
// a Coordinator (exclusive: the data-dir lock rules out a second one; its oracle is the WALs'
// TSO) and StreamingNode 1, to which it assigns every pchannel.
//
// Startup: logging, data dir checks and lock, the HTTP server (/healthz answers 503 "starting"
// until the end of startup, /metrics), tracing (OTEL_* env), the metadata store, gRPC
// (StreamingNode + StreamingCoord: discovery, status, timestamps), the coordinator, the node;
// ready once every pchannel's WAL is open and ASSIGNED: then /healthz 200 and a startup
// summary log line. A WAL that fails to open fails startup.
// Shutdown on the first SIGTERM/SIGINT: /healthz 503 "stopping", stop accepting streams and
// appends (ON_SHUTDOWN), let in-flight appends finish and their acks be written, stop the
// coordinator, close every WAL (the backend drains), stop the HTTP server, flush traces, return 0.
//
// Returns the process exit code: 0 after a graceful shutdown, 1 when startup fails (the reason
// is logged).
#pragma once

#include "server/config.h"
#include "server/server_main.h"
#include "server/signals.h"

namespace kf::server {

int RunStandalone(const ServerConfig& config, ShutdownSignals* signals,
                  const ServerHooks& hooks = {});

}  // namespace kf::server
