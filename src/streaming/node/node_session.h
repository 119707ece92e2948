// NodeSession: a streaming node's registration in the metadata store (docs/cluster.md, node 1):
// `nodes/<id>` = NodeInfo, attached to a lease the session keeps alive every ttl/3.
//
// The session is lost when a keepalive finds the lease gone (NOT_FOUND: the process was paused
// or cut off longer than the TTL, and the coordinator may already have moved its pchannels) or
// when no keepalive succeeded for a whole TTL. Then `on_lost` runs (the node stops serving
// everything) and the session registers again, with backoff, under a new lease.
//
// Thread-safety: thread-safe; on_lost runs on the session's thread. Ownership: borrows the
// store, which must outlive the session; the destructor revokes the lease (so the coordinator
// moves the pchannels at once instead of after the TTL).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kingfisher/v1/streaming.pb.h"
#include "storage/meta/meta_store.h"
#include "streaming/cluster_meta.h"

namespace kf::streaming {

class NodeSession {
 public:
  struct Options {
    int64_t node_id = 0;
    std::string address;  // host:port clients reach the node at
    absl::Duration ttl = absl::Seconds(10);
    absl::Duration call_timeout = absl::Seconds(5);
    std::function<void()> on_lost;  // may be empty
  };

  // Registers (fails if the first registration fails before `deadline`) and starts the
  // keepalive thread.
  static absl::StatusOr<std::unique_ptr<NodeSession>> Start(meta::MetaStore* store,
                                                            ClusterKeys keys, Options options,
                                                            absl::Time deadline);
  ~NodeSession();

  // Rewrites the node's state (e.g. NODE_DRAINING); kept across re-registrations.
  absl::Status SetState(kingfisher::v1::NodeState state, absl::Time deadline);

  // Registrations so far (1 after Start; grows with every re-registration).
  int64_t registrations() const;
  // False from the moment the session is found lost (before on_lost runs) until it registers
  // again: a node must not open WALs on the strength of assignments it may no longer hold.
  bool registered() const;

 private:
  NodeSession(meta::MetaStore* store, ClusterKeys keys, Options options);

  absl::Status Register(absl::Time deadline) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void KeepAliveLoop();
  // Waits `d` unless stopping; true when stopping.
  bool Pause(absl::Duration d);

  meta::MetaStore* const store_;
  const ClusterKeys keys_;
  const Options options_;

  mutable absl::Mutex mu_;
  meta::LeaseId lease_ ABSL_GUARDED_BY(mu_) = meta::kNoLease;
  kingfisher::v1::NodeState state_ ABSL_GUARDED_BY(mu_) = kingfisher::v1::NODE_ONLINE;
  int64_t registrations_ ABSL_GUARDED_BY(mu_) = 0;
  bool registered_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::jthread keeper_;
};

}  // namespace kf::streaming
