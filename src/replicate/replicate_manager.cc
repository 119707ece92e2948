#include "replicate/replicate_manager.h"

#include <set>
#include <utility>

#include "message/replicate_config.h"

namespace kf::replicate {

ReplicateManager::ReplicateManager(const streaming::node::WalRegistry* registry, Options options)
    : registry_(registry), options_(std::move(options)) {
  thread_ = std::jthread([this](std::stop_token stop) {
    absl::Mutex mu;
    absl::CondVar wake;
    std::stop_callback on_stop(stop, [&] {
      absl::MutexLock l(&mu);
      wake.SignalAll();
    });
    while (!stop.stop_requested()) {
      Reconcile();
      absl::MutexLock l(&mu);
      if (!stop.stop_requested()) wake.WaitWithTimeout(&mu, options_.interval);
    }
  });
}

ReplicateManager::~ReplicateManager() {
  thread_.request_stop();
  if (thread_.joinable()) thread_.join();
  std::map<Key, std::unique_ptr<Replicator>> stopping;
  {
    absl::MutexLock lock(&mu_);
    stopping.swap(replicators_);
  }
}

void ReplicateManager::Reconcile() {
  // What should run: (pchannel, secondary) -> its options and the WAL it reads.
  std::map<Key, std::pair<Replicator::Options, std::shared_ptr<wal::Wal>>> want;
  for (const auto& info : registry_->List()) {
    absl::StatusOr<std::shared_ptr<wal::Wal>> wal = registry_->Get(info.pchannel);
    if (!wal.ok() || !(*wal)->Health().ok()) continue;
    const kingfisher::v1::WalReplicateState state = (*wal)->replicate_state();
    if (RoleOf(state.config(), options_.cluster_id).kind != ReplicateRole::Kind::kPrimary) continue;
    for (const auto& edge : state.config().topology()) {
      if (edge.source_cluster_id() != options_.cluster_id) continue;
      const kingfisher::v1::ReplicateCluster* target =
          FindCluster(state.config(), edge.target_cluster_id());
      std::optional<std::string> peer = PeerPChannel(state.config(), options_.cluster_id,
                                                     info.pchannel, edge.target_cluster_id());
      if (target == nullptr || !peer.has_value()) continue;
      want[{info.pchannel, target->cluster_id()}] = {
          Replicator::Options{.cluster_id = options_.cluster_id,
                              .pchannel = info.pchannel,
                              .secondary_id = target->cluster_id(),
                              .secondary_endpoint = target->endpoint(),
                              .secondary_pchannel = *peer},
          *wal};
    }
  }
  // Declared before the lock: destroyed (joined) after it is released.
  std::vector<std::unique_ptr<Replicator>> stopping;
  absl::MutexLock lock(&mu_);
  for (auto it = replicators_.begin(); it != replicators_.end();) {
    auto w = want.find(it->first);
    const Replicator& r = *it->second;
    const bool same = w != want.end() && w->second.second == r.wal() &&
                      w->second.first.secondary_endpoint == r.options().secondary_endpoint &&
                      w->second.first.secondary_pchannel == r.options().secondary_pchannel &&
                      r.running();
    if (same) {
      want.erase(w);
      ++it;
    } else {
      stopping.push_back(std::move(it->second));
      it = replicators_.erase(it);
    }
  }
  for (auto& [key, what] : want) {
    replicators_[key] = std::make_unique<Replicator>(std::move(what.first), std::move(what.second));
  }
}

std::vector<ReplicateManager::Entry> ReplicateManager::Status() const {
  std::vector<Entry> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, r] : replicators_) {
    out.push_back({.options = r->options(),
                   .progress = r->progress(),
                   .wal_last_tt = r->wal()->LastTimeTick().value()});
  }
  return out;
}

}  // namespace kf::replicate
