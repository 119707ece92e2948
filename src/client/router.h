// Router: which node serves each pchannel, at which term (docs/cluster.md "Client").
//
// A discovery thread keeps a WatchAssignments stream open to the endpoint (the coordinator or
// any node) and keeps the latest AssignmentSnapshot; if that endpoint fails it tries the nodes
// of the last snapshot, with backoff, so a client survives the loss of the node it bootstrapped
// from. Producers and consumers Resolve a pchannel before each attempt; after a routing error
// (CHANNEL_NOT_EXIST, UNMATCHED_CHANNEL_TERM, CHANNEL_FENCED) they pass the version they used,
// and Resolve waits for a newer snapshot (wait-for-ready while a WAL moves).
//
// The discovery thread does not wait inside gRPC (see Follow): a new snapshot reaches Resolve
// within kFollowPoll even when nothing else in the process polls.
//
// An endpoint without discovery (UNIMPLEMENTED: a server that predates it, or a test fake) puts
// the router in static mode: every pchannel routes to the endpoint, term 0 (unchecked).
//
// Thread-safety: thread-safe. Ownership: owns the channels and stubs it hands out (routes
// share them), and the discovery thread, which the destructor stops.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "kingfisher/v1/streaming.grpc.pb.h"

namespace kf::client {

class Router {
 public:
  // A connection to one node, shared by every route to it.
  struct Node {
    std::string address;
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<kingfisher::v1::StreamingNode::Stub> stub;
  };
  struct Route {
    std::shared_ptr<Node> node;
    int64_t term = 0;     // 0 in static mode (the server does not check it)
    int64_t version = 0;  // of the snapshot it came from
  };

  // Channels made with `args` and `credentials` (wire/credentials.h).
  Router(std::string endpoint, grpc::ChannelArguments args,
         std::shared_ptr<grpc::ChannelCredentials> credentials);
  ~Router();

  // The channel to the endpoint itself (status calls).
  std::shared_ptr<grpc::Channel> endpoint_channel() const { return endpoint_->channel; }

  // The route of `pchannel` from the first snapshot with version > `after_version` in which it
  // is ASSIGNED, waiting for one until `deadline` (UNAVAILABLE then, naming what was seen) or
  // until `stop` returns true (CANCELLED; checked every 100 ms). INVALID_ARGUMENT when the
  // snapshot lists the cluster's pchannels and `pchannel` is not among them.
  absl::StatusOr<Route> Resolve(const std::string& pchannel, int64_t after_version,
                                absl::Time deadline, const std::function<bool()>& stop = nullptr);

  // False once the latest snapshot routes `pchannel` to another node or term than `route`
  // (static routes never go stale): a caller waiting for the old node's channel should stop.
  bool IsCurrent(const std::string& pchannel, const Route& route) const;

 private:
  std::shared_ptr<Node> NodeAt(const std::string& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DiscoveryLoop();
  // Follows one WatchAssignments stream until it fails; returns its status.
  absl::Status Follow(const std::shared_ptr<Node>& node);
  // How long an idle discovery stream goes without this thread polling it.
  static constexpr absl::Duration kFollowPoll = absl::Milliseconds(50);

  const grpc::ChannelArguments args_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  std::shared_ptr<Node> endpoint_;

  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Node>> nodes_ ABSL_GUARDED_BY(mu_);  // by address
  std::shared_ptr<const kingfisher::v1::AssignmentSnapshot> snapshot_ ABSL_GUARDED_BY(mu_);
  bool static_ ABSL_GUARDED_BY(mu_) = false;
  std::string last_error_ ABSL_GUARDED_BY(mu_) = "no assignment received yet";
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* watch_ctx_ ABSL_GUARDED_BY(mu_) = nullptr;  // the live stream's
  std::thread discovery_;
};

}  // namespace kf::client
