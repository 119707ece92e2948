// `kingfisher run logstore`: one replica node of the quorum WAL backend (docs/quorum-wal.md).
// Serves the LogStore service on --listen over --data-dir, uploads sealed segments to
// --object-store (file:///DIR), and with --etcd registers itself under
// kf/<cluster>/logstores/<address> on a lease (--lease-ttl) so writers find it.
#pragma once

#include "server/config.h"
#include "server/signals.h"

namespace kf::server {

// Runs until a shutdown signal; the process exit code.
int RunLogStore(const ServerConfig& config, ShutdownSignals* signals);

}  // namespace kf::server
