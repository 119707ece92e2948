#include "client/router.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "client/channel_ready.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "wire/status_convert.h"

namespace kf::client {

Router::Router(std::string endpoint, grpc::ChannelArguments args,
               std::shared_ptr<grpc::ChannelCredentials> credentials)
    : args_(std::move(args)), credentials_(std::move(credentials)) {
  absl::MutexLock l(&mu_);
  endpoint_ = NodeAt(endpoint);
  discovery_ = std::thread([this] { DiscoveryLoop(); });
}

Router::~Router() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
    if (watch_ctx_ != nullptr) watch_ctx_->TryCancel();
  }
  discovery_.join();
}

std::shared_ptr<Router::Node> Router::NodeAt(const std::string& address) {
  std::shared_ptr<Node>& n = nodes_[address];
  if (n == nullptr) {
    n = std::make_shared<Node>();
    n->address = address;
    grpc::ChannelArguments args = args_;
    n->channel = grpc::CreateCustomChannel(address, credentials_, args);
    n->stub = kingfisher::v1::StreamingNode::NewStub(n->channel);
  }
  return n;
}

absl::StatusOr<Router::Route> Router::Resolve(const std::string& pchannel, int64_t after_version,
                                              absl::Time deadline,
                                              const std::function<bool()>& stop) {
  absl::MutexLock l(&mu_);
  for (;;) {
    if (static_) return Route{endpoint_, 0, 0};
    if (snapshot_ != nullptr && snapshot_->version() > after_version) {
      bool known = false;
      for (const auto& p : snapshot_->pchannels()) {
        if (p.pchannel() != pchannel) continue;
        known = true;
        if (p.state() != kingfisher::v1::PCHANNEL_ASSIGNED) continue;
        for (const auto& n : snapshot_->nodes()) {
          if (n.id() == p.node()) return Route{NodeAt(n.address()), p.term(), snapshot_->version()};
        }
      }
      // The coordinator creates a cluster's pchannels together (streaming/coord/coordinator.h).
      if (!known && snapshot_->pchannels_size() > 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "pchannel ", pchannel, " is not a pchannel of this cluster (it has ",
            snapshot_->pchannels_size(), ", e.g. ", snapshot_->pchannels(0).pchannel(), ")"));
      }
    }
    if (stopping_ || (stop && stop())) return absl::CancelledError("client closing");
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::UnavailableError(absl::StrCat(
          "pchannel ", pchannel, " has no ready node before the deadline (",
          snapshot_ == nullptr ? last_error_
                               : absl::StrCat("assignment version ", snapshot_->version()),
          ")"));
    }
    auto changed = [this, seen = snapshot_]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return snapshot_ != seen || static_ || stopping_;
    };
    mu_.AwaitWithDeadline(absl::Condition(&changed),
                          std::min(deadline, now + absl::Milliseconds(100)));
  }
}

bool Router::IsCurrent(const std::string& pchannel, const Route& route) const {
  absl::MutexLock l(&mu_);
  if (static_ || snapshot_ == nullptr || snapshot_->version() <= route.version) return true;
  for (const auto& p : snapshot_->pchannels()) {
    if (p.pchannel() != pchannel) continue;
    if (p.term() != route.term) return false;
    for (const auto& n : snapshot_->nodes()) {
      if (n.id() == p.node()) return n.address() == route.node->address;
    }
    return false;
  }
  return false;
}

void Router::DiscoveryLoop() {
  absl::Duration backoff = absl::Milliseconds(50);
  size_t next = 0;
  for (;;) {
    std::shared_ptr<Node> node;
    {
      absl::MutexLock l(&mu_);
      if (stopping_) return;
      // The endpoint first, then the nodes of the last snapshot in turn.
      std::vector<std::string> candidates = {endpoint_->address};
      if (snapshot_ != nullptr) {
        for (const auto& n : snapshot_->nodes()) {
          if (n.address() != endpoint_->address) candidates.push_back(n.address());
        }
      }
      node = NodeAt(candidates[next++ % candidates.size()]);
    }
    absl::Status s = Follow(node);
    absl::MutexLock l(&mu_);
    if (stopping_) return;
    if (absl::IsUnimplemented(s)) {
      static_ = true;  // no discovery at the endpoint: route everything there
      return;
    }
    last_error_ = absl::StrCat("discovery from ", node->address, ": ", s.ToString());
    auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (mu_.AwaitWithTimeout(absl::Condition(&stopping), backoff)) return;
    backoff = std::min(backoff * 2, absl::Seconds(1));
  }
}

absl::Status Router::Follow(const std::shared_ptr<Node>& node) {
  // Polls the channel so that a reconnect is noticed at once (channel_ready.h).
  absl::Status ready = AwaitChannelReady(*node->channel, absl::Now() + absl::Seconds(2), [this] {
    absl::MutexLock l(&mu_);
    return stopping_;
  });
  if (!ready.ok()) return ready;
  grpc::ClientContext ctx;
  {
    absl::MutexLock l(&mu_);
    if (stopping_) return absl::CancelledError("closing");
    watch_ctx_ = &ctx;
  }
  auto stub = kingfisher::v1::StreamingCoord::NewStub(node->channel);
  // A polling queue: a call on a non-polling one aborts the process inside gRPC (1.51,
  // polling_entity.cc: "pollset != nullptr") when it has to wait for a connection, e.g. while
  // its server shuts down or the coordinator restarts.
  auto cq = std::make_unique<grpc::CompletionQueue>();
  // One operation at a time, so each Next completes the one started just before it.
  void* const kTag = cq.get();
  // Waits for that operation without blocking inside gRPC: a thread blocked in a polling queue
  // takes turns as the process's poller, so every event of every call then wakes it to hand
  // the role on, and a lone producer's acknowledgement took one more hop (docs/performance.md:
  // its p50 fell by a sixth). Whoever polls (a producer's or consumer's thread, a server's gRPC
  // threads) completes this call's operations too; this thread looks every 1 ms after an
  // event, backing off to kFollowPoll while the stream is idle.
  absl::Duration poll = absl::Milliseconds(1);
  auto completed = [&] {
    void* tag;
    bool ok = false;
    for (;;) {
      switch (cq->AsyncNext(&tag, &ok, gpr_time_0(GPR_CLOCK_MONOTONIC))) {
        case grpc::CompletionQueue::GOT_EVENT:
          poll = absl::Milliseconds(1);
          return ok;
        case grpc::CompletionQueue::SHUTDOWN:
          return false;
        case grpc::CompletionQueue::TIMEOUT:
          break;
      }
      bool stop;
      {
        absl::MutexLock l(&mu_);
        auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
        stop = mu_.AwaitWithTimeout(absl::Condition(&stopping), poll);
      }
      // Closing: the call was cancelled and its operation completes at once.
      if (stop) return cq->Next(&tag, &ok) && ok;
      poll = std::min(poll * 2, kFollowPoll);
    }
  };
  auto reader =
      stub->AsyncWatchAssignments(&ctx, kingfisher::v1::WatchAssignmentsRequest(), cq.get(), kTag);
  kingfisher::v1::AssignmentSnapshot snapshot;
  auto read = [&] {
    reader->Read(&snapshot, kTag);
    return completed();
  };
  if (completed()) {  // the call started
    while (read()) {
      absl::MutexLock l(&mu_);
      // Another node's view may lag the one we had: never go back.
      if (snapshot_ == nullptr || snapshot.version() >= snapshot_->version()) {
        snapshot_ = std::make_shared<kingfisher::v1::AssignmentSnapshot>(std::move(snapshot));
      }
    }
  }
  grpc::Status st;
  reader->Finish(&st, kTag);
  completed();
  cq->Shutdown();
  void* tag;
  bool ok;
  while (cq->Next(&tag, &ok)) {
  }
  absl::MutexLock l(&mu_);
  watch_ctx_ = nullptr;
  return st.ok() ? absl::UnavailableError("discovery stream ended") : kf::wire::FromGrpcStatus(st);
}

}  // namespace kf::client
