#include "wire/channel_args.h"

#include "grpc/grpc.h"

namespace kf::wire {

grpc::ChannelArguments PeerChannelArguments() {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  args.SetMaxSendMessageSize(-1);
  // GRPC_ARG_MIN_RECONNECT_BACKOFF_MS is also the minimum connect timeout.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt("grpc.dns_min_time_between_resolutions_ms", 100);
  return args;
}

}  // namespace kf::wire
