// AwaitChannelReady: wait-for-ready for the client's streams, bounded by a deadline.
//
// Why: the client uses gRPC's synchronous API, where nothing polls a channel's sockets unless a
// call or a watcher is waiting on it. After the server went away, pick_first stays in
// TRANSIENT_FAILURE until a new connection is READY, so every fail-fast call (a stream
// creation without wait_for_ready) fails at once and polls nothing: a reconnect that the
// kernel completes in microseconds is only noticed by gRPC's 5 s backup poller, and meanwhile
// the attempt's connect deadline shuts it down ("tcp handshaker shutdown"). Waiting here polls
// the channel (Channel::WaitForStateChange watches it through a completion queue), so the
// connection completes as soon as the server listens again.
//
// Thread-safety: thread-safe (gRPC channels are). Errors: UNAVAILABLE when the channel is not
// READY by `deadline`; CANCELLED when `stop` returned true first.
#pragma once

#include <functional>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"

namespace kf::client {

// Returns OK once `channel` is READY (at once if it already is), asking it to connect. `stop`
// (may be null) is checked at least every 100 ms so that a closing owner is not held up.
absl::Status AwaitChannelReady(grpc::Channel& channel, absl::Time deadline,
                               const std::function<bool()>& stop = nullptr);

}  // namespace kf::client
