#include "client/channel_ready.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace kf::client {
namespace {

const char* StateName(grpc_connectivity_state s) {
  switch (s) {
    case GRPC_CHANNEL_IDLE:
      return "IDLE";
    case GRPC_CHANNEL_CONNECTING:
      return "CONNECTING";
    case GRPC_CHANNEL_READY:
      return "READY";
    case GRPC_CHANNEL_TRANSIENT_FAILURE:
      return "TRANSIENT_FAILURE";
    case GRPC_CHANNEL_SHUTDOWN:
      return "SHUTDOWN";
  }
  return "UNKNOWN";
}

}  // namespace

absl::Status AwaitChannelReady(grpc::Channel& channel, absl::Time deadline,
                               const std::function<bool()>& stop) {
  constexpr absl::Duration kSlice = absl::Milliseconds(100);
  while (true) {
    // try_to_connect: an IDLE channel starts connecting (and a failed one keeps retrying on
    // its reconnect backoff while we watch it).
    grpc_connectivity_state state = channel.GetState(/*try_to_connect=*/true);
    if (state == GRPC_CHANNEL_READY) return absl::OkStatus();
    if (state == GRPC_CHANNEL_SHUTDOWN) return absl::UnavailableError("channel shut down");
    if (stop && stop()) return absl::CancelledError("closed while waiting for the connection");
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::UnavailableError(absl::StrCat(
          "not connected before the attempt deadline (channel ", StateName(state), ")"));
    }
    // Blocks in a completion queue that watches the channel: this is what polls the pending
    // connection attempt. A timeout just means "no change yet".
    channel.WaitForStateChange(state, absl::ToChronoTime(std::min(deadline, now + kSlice)));
  }
}

}  // namespace kf::client
