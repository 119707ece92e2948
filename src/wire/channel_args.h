// Channel arguments every Kingfisher client of a Kingfisher server uses: the client library's
// router, a replicator's router and the quorum backend's logstore clients.
#pragma once

#include "grpcpp/support/channel_arguments.h"

namespace kf::wire {

// No message size limit (payloads up to 64 MiB plus properties, docs/semantics.md §8), and a
// prompt reconnect after the server restarts: gRPC's default backoff grows to 120 s, and gRPC
// 1.51 lets a failed subchannel re-resolve its address only once per 30 s. A reconnect only
// completes while something polls the channel (client/channel_ready.h). No keepalive pings: a
// server that does not permit them answers frequent pings with GOAWAY (too_many_pings), which
// would break healthy idle streams; a stuck call is caught by its own deadline instead.
grpc::ChannelArguments PeerChannelArguments();

}  // namespace kf::wire
