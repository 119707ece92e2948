// Why a server cannot listen on an address, in words an operator can act on.
//
// gRPC and cpp-httplib only say that binding failed; ListenError binds a throwaway socket to
// the same address to learn the reason (errno). Every listener of the process binds without
// SO_REUSEPORT, so a second server on a port that a running one holds fails here instead of
// sharing the port (the kernel would spread clients over both).
//
// Thread-safe; no state.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace kf {

// UNAVAILABLE "<what>: cannot listen on <host>:<port>: address in use (port <port> is held by
// another process)", or with the reason bind(2) gives (not a local address, permission denied).
absl::Status ListenError(std::string_view what, const std::string& host, int port);

}  // namespace kf
