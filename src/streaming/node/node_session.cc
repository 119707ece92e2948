#include "streaming/node/node_session.h"

#include <algorithm>
#include <utility>

#include "spdlog/spdlog.h"

namespace kf::streaming {

absl::StatusOr<std::unique_ptr<NodeSession>> NodeSession::Start(meta::MetaStore* store,
                                                                ClusterKeys keys, Options options,
                                                                absl::Time deadline) {
  std::unique_ptr<NodeSession> s(new NodeSession(store, std::move(keys), std::move(options)));
  {
    absl::MutexLock l(&s->mu_);
    if (absl::Status st = s->Register(deadline); !st.ok()) return st;
  }
  s->keeper_ = std::jthread([p = s.get()] { p->KeepAliveLoop(); });
  return s;
}

NodeSession::NodeSession(meta::MetaStore* store, ClusterKeys keys, Options options)
    : store_(store), keys_(std::move(keys)), options_(std::move(options)) {}

NodeSession::~NodeSession() {
  {
    absl::MutexLock l(&mu_);
    stopping_ = true;
  }
  if (keeper_.joinable()) keeper_.join();
  meta::LeaseId lease;
  {
    absl::MutexLock l(&mu_);
    lease = lease_;  // after the join: the keeper may have registered again
  }
  if (lease != meta::kNoLease) {
    absl::Status s = store_->RevokeLease(lease, absl::Now() + options_.call_timeout);
    if (!s.ok() && !absl::IsNotFound(s)) {
      spdlog::warn("node {}: could not revoke its lease ({}); it expires after the TTL",
                   options_.node_id, s.ToString());
    }
  }
}

int64_t NodeSession::registrations() const {
  absl::MutexLock l(&mu_);
  return registrations_;
}

bool NodeSession::registered() const {
  absl::MutexLock l(&mu_);
  return registered_;
}

absl::Status NodeSession::Register(absl::Time deadline) {
  absl::StatusOr<meta::LeaseGrant> grant = store_->GrantLease(options_.ttl, deadline);
  if (!grant.ok()) return grant.status();
  kingfisher::v1::NodeInfo info;
  info.set_id(options_.node_id);
  info.set_address(options_.address);
  info.set_state(state_);
  absl::StatusOr<int64_t> put =
      store_->Put(keys_.node(options_.node_id), info.SerializeAsString(), deadline, grant->id);
  if (!put.ok()) {
    (void)store_->RevokeLease(grant->id, deadline);  // best effort; it expires anyway
    return put.status();
  }
  lease_ = grant->id;
  ++registrations_;
  registered_ = true;
  spdlog::info("node {} registered at {} (lease {}, ttl {})", options_.node_id, options_.address,
               lease_, absl::FormatDuration(grant->ttl));
  return absl::OkStatus();
}

absl::Status NodeSession::SetState(kingfisher::v1::NodeState state, absl::Time deadline) {
  absl::MutexLock l(&mu_);
  state_ = state;
  kingfisher::v1::NodeInfo info;
  info.set_id(options_.node_id);
  info.set_address(options_.address);
  info.set_state(state);
  return store_->Put(keys_.node(options_.node_id), info.SerializeAsString(), deadline, lease_)
      .status();
}

bool NodeSession::Pause(absl::Duration d) {
  absl::MutexLock l(&mu_);
  auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
  return mu_.AwaitWithTimeout(absl::Condition(&stopping), d);
}

void NodeSession::KeepAliveLoop() {
  const absl::Duration period = options_.ttl / 3;
  absl::Time last_ok = absl::Now();
  bool lost = false;
  absl::Duration backoff = absl::Milliseconds(100);
  while (!Pause(lost ? backoff : period)) {
    if (!lost) {
      meta::LeaseId lease;
      {
        absl::MutexLock l(&mu_);
        lease = lease_;
      }
      absl::StatusOr<absl::Duration> ttl =
          store_->KeepAliveOnce(lease, absl::Now() + std::min(period, options_.call_timeout));
      if (ttl.ok()) {
        last_ok = absl::Now();
        continue;
      }
      if (!absl::IsNotFound(ttl.status()) && absl::Now() - last_ok < options_.ttl) {
        spdlog::warn("node {}: lease keepalive failed ({}), retrying", options_.node_id,
                     ttl.status().ToString());
        continue;
      }
      spdlog::error("node {}: session lost ({}); closing every pchannel and registering again",
                    options_.node_id,
                    absl::IsNotFound(ttl.status()) ? "lease expired" : ttl.status().ToString());
      lost = true;
      {
        absl::MutexLock l(&mu_);
        registered_ = false;
      }
      if (options_.on_lost) options_.on_lost();
    }
    absl::MutexLock l(&mu_);
    absl::Status s = Register(absl::Now() + options_.call_timeout);
    if (s.ok()) {
      lost = false;
      last_ok = absl::Now();
      backoff = absl::Milliseconds(100);
    } else {
      spdlog::warn("node {}: registration failed ({}), retrying in {}", options_.node_id,
                   s.ToString(), absl::FormatDuration(backoff));
      backoff = std::min(backoff * 2, absl::Seconds(2));
    }
  }
}

}  // namespace kf::streaming
