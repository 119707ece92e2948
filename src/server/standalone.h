// RunStandalone: one process that is coordinator and streaming node for every pchannel
// (`kingfisher run standalone`).
//
// Startup: logging, data dir checks and lock, tracing (OTEL_* env), TSO, the node term bumped
// and persisted, every pchannel's WAL opened at that term, gRPC (StreamingNode +
// StreamingCoord.GetStatus) and HTTP (/healthz) servers, then a startup summary log line.
// Shutdown on the first SIGTERM/SIGINT: stop accepting streams and appends (ON_SHUTDOWN), let
// in-flight appends finish and their acks be written, close every WAL (the backend drains),
// flush traces, return 0.
//
// Test-only: KINGFISHER_TEST_CRASH_AFTER_DURABLE=N makes the process die (std::_Exit(137), as
// if SIGKILLed) right after its N-th append became durable and before that ack is written.
//
// Returns the process exit code: 0 after a graceful shutdown, 1 when startup fails (the reason
// is logged).
#pragma once

#include "server/config.h"
#include "server/signals.h"

namespace kf::server {

int RunStandalone(const ServerConfig& config, ShutdownSignals* signals);

}  // namespace kf::server
