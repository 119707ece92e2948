// The in-process fast path (docs/semantics.md §5 "Client"): a client that lives in a streaming
// node's process appends to and reads from that node's own Wals directly whenever the route of a
// pchannel points at this node, instead of through gRPC to itself. Routing, retries, errors and
// the resume rules are the same as remote; only the hop is gone, and with it the
// `wal.dist_append` / `wal.dist_consume` spans (docs/tracing.md: they appear exactly when an append
// or a read crossed the network).
//
// Thread-safety: the lookup is called from any client thread.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "kingfisher/client.h"
#include "wal/wal.h"

namespace kf::client {

// The Wal serving `pchannel` at `term` in this process, or null (the client then goes remote).
using LocalWalLookup =
    std::function<std::shared_ptr<wal::Wal>(const std::string& pchannel, int64_t term)>;

// Client::Connect plus the fast path through `local`.
absl::StatusOr<std::unique_ptr<kingfisher::Client>> ConnectInProcess(
    kingfisher::ClientOptions options, LocalWalLookup local);

}  // namespace kf::client
