// LocalWalTransport: the node's side of the client's in-process fast path
// (client/local_transport.h). A client created in a streaming node's process with
// ConnectInProcess appends to and reads from the node's own Wals for the pchannels the node
// serves, exactly as the node's Produce and Consume handlers would (the same validation, the
// same scanner), minus the network hop.
//
// Thread-safety: the transport and what it returns are called from any client thread; the
// lookup must be thread-safe. Errors: those of Wal::Append and Wal::Read, and INVALID_ARGUMENT
// for a message the Produce handler would refuse.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "client/local_transport.h"
#include "kingfisher/client.h"
#include "wal/wal.h"

namespace kf::streaming::node {

// The Wal serving `pchannel` at `term` in this process, or null.
using LocalWalLookup =
    std::function<std::shared_ptr<wal::Wal>(const std::string& pchannel, int64_t term)>;

client::LocalTransport LocalWalTransport(LocalWalLookup lookup);

// Client::Connect with the fast path through the Wals `lookup` finds.
absl::StatusOr<std::unique_ptr<kingfisher::Client>> ConnectInProcess(
    kingfisher::ClientOptions options, LocalWalLookup lookup);

}  // namespace kf::streaming::node
