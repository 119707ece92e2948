#include "replicate/replicate_manager.h"

#include <set>
#include <utility>

#include "message/replicate_config.h"
#include "spdlog/spdlog.h"

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
  std::vector<std::shared_ptr<wal::Wal>> open;
  for (const auto& info : registry_->List()) {
    absl::StatusOr<std::shared_ptr<wal::Wal>> wal = registry_->Get(info.pchannel);
    if (!wal.ok() || !(*wal)->Health().ok()) continue;
    const kingfisher::v1::WalReplicateState state = (*wal)->replicate_state();
    const ReplicateRole::Kind role = RoleOf(state.config(), options_.cluster_id).kind;
    open.push_back(*wal);
    // A replicator to `target_id` as `config` names it.
    auto add = [&](const kingfisher::v1::ReplicateConfiguration& config,
                   const std::string& target_id, bool handover) {
      const kingfisher::v1::ReplicateCluster* target = FindCluster(config, target_id);
      std::optional<std::string> peer =
          PeerPChannel(config, options_.cluster_id, info.pchannel, target_id);
      if (target == nullptr || !peer.has_value()) return;
      const Key key{info.pchannel, target_id};
      if (handover && FinishedOn(key) == *wal) return;  // once per WAL
      want[key] = {Replicator::Options{.cluster_id = options_.cluster_id,
                                       .pchannel = info.pchannel,
                                       .secondary_id = target_id,
                                       .secondary_endpoint = target->endpoint(),
                                       .secondary_pchannel = *peer,
                                       .credentials = options_.peer_credentials},
                   *wal};
    };
    if (role == ReplicateRole::Kind::kPrimary) {
      for (const auto& edge : state.config().topology()) {
        if (edge.source_cluster_id() == options_.cluster_id) {
          add(state.config(), edge.target_cluster_id(), /*handover=*/false);
        }
      }
    }
    // A primary configured out hands over to the secondaries it had, also when this node opened
    // the WAL after that change (it restarted, or the pchannel moved here): the replicator
    // stops at the change (handed over, or fenced when the peer was promoted without it).
    for (const kingfisher::v1::ReplicateHandover& h : state.handovers()) {
      add(h.config(), h.target_cluster_id(), /*handover=*/true);
    }
  }
  const absl::Status resolved =
      options_.ddl_pieces != nullptr ? options_.ddl_pieces->Resolve(open) : absl::OkStatus();
  // Declared before the lock: destroyed (joined) after it is released.
  std::vector<std::unique_ptr<Replicator>> stopping;
  absl::MutexLock lock(&mu_);
  if (!resolved.ok() && resolved.ToString() != resolve_error_) {  // once per distinct error
    spdlog::warn("replicate: checking the recorded DDL copies failed ({})", resolved.ToString());
  }
  resolve_error_ = resolved.ok() ? "" : resolved.ToString();
  for (auto it = replicators_.begin(); it != replicators_.end();) {
    const Replicator& r = *it->second;
    auto w = want.find(it->first);
    bool keep = r.running();
    if (keep && w != want.end()) {
      keep = w->second.second == r.wal() &&
             w->second.first.secondary_endpoint == r.options().secondary_endpoint &&
             w->second.first.secondary_pchannel == r.options().secondary_pchannel;
    } else if (keep) {
      // Configured out: it runs on to the AlterReplicateConfig that removed it and stops there
      // (replicator.h), unless its WAL is no longer served here.
      absl::StatusOr<std::shared_ptr<wal::Wal>> served = registry_->Get(r.options().pchannel);
      keep = served.ok() && *served == r.wal();
    }
    if (keep) {
      if (w != want.end()) want.erase(w);
      ++it;
      continue;
    }
    if (const Replicator::Progress p = r.progress();
        p.state == "handed_over" || p.state == "fenced") {
      handed_over_[it->first] = {.options = r.options(), .progress = p};
    }
    if (!r.running()) finished_[it->first] = r.wal();
    stopping.push_back(std::move(it->second));
    it = replicators_.erase(it);
  }
  for (auto& [key, what] : want) {
    handed_over_.erase(key);
    replicators_[key] = std::make_unique<Replicator>(std::move(what.first), std::move(what.second));
  }
}

std::shared_ptr<wal::Wal> ReplicateManager::FinishedOn(const Key& key) const {
  absl::MutexLock lock(&mu_);
  if (auto r = replicators_.find(key); r != replicators_.end() && !r->second->running()) {
    return r->second->wal();  // ended, not let go yet
  }
  auto it = finished_.find(key);
  return it == finished_.end() ? nullptr : it->second.lock();
}

std::vector<ReplicateManager::Entry> ReplicateManager::Status() const {
  std::vector<Entry> out;
  absl::MutexLock lock(&mu_);
  for (const auto& [key, r] : replicators_) {
    Replicator::Progress p = r->progress();
    const TimeTick checkpoint(p.checkpoint_tt);
    out.push_back({.options = r->options(),
                   .progress = std::move(p),
                   .wal_last_tt = r->wal()->LastTimeTick().value(),
                   .behind = r->wal()->MessagesAfter(checkpoint)});
  }
  for (const auto& [key, e] : handed_over_) out.push_back(e);
  return out;
}

}  // namespace kf::replicate
