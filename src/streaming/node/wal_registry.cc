#include "streaming/node/wal_registry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"

namespace kf::streaming::node {

void StaticWalRegistry::Add(std::shared_ptr<wal::Wal> wal) {
  auto pos = std::lower_bound(wals_.begin(), wals_.end(), wal->pchannel(),
                              [](const std::shared_ptr<wal::Wal>& w, const std::string& name) {
                                return w->pchannel() < name;
                              });
  wals_.insert(pos, std::move(wal));
}

absl::StatusOr<std::shared_ptr<wal::Wal>> StaticWalRegistry::Get(std::string_view pchannel) const {
  auto pos = std::lower_bound(wals_.begin(), wals_.end(), pchannel,
                              [](const std::shared_ptr<wal::Wal>& w, std::string_view name) {
                                return w->pchannel() < name;
                              });
  if (pos == wals_.end() || (*pos)->pchannel() != pchannel) {
    // Standalone serves every pchannel of the cluster: one it does not have does not exist.
    return StreamingError(StreamingCode::kInvalidArgument, "pchannel '" + std::string(pchannel) +
                                                               "' does not exist in this cluster");
  }
  return *pos;
}

std::vector<WalRegistry::PChannelInfo> StaticWalRegistry::List() const {
  std::vector<PChannelInfo> out;
  out.reserve(wals_.size());
  for (const auto& w : wals_) out.push_back({w->pchannel(), w->term(), w->readers()});
  return out;
}

std::vector<std::shared_ptr<wal::Wal>> StaticWalRegistry::All() const { return wals_; }

namespace {
std::vector<std::string> Sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

DynamicWalRegistry::DynamicWalRegistry(std::vector<std::string> cluster_pchannels)
    : cluster_pchannels_(Sorted(std::move(cluster_pchannels))) {}

absl::StatusOr<std::shared_ptr<wal::Wal>> DynamicWalRegistry::Get(std::string_view pchannel) const {
  {
    absl::MutexLock l(&mu_);
    if (auto it = wals_.find(pchannel); it != wals_.end()) return it->second;
  }
  if (!std::binary_search(cluster_pchannels_.begin(), cluster_pchannels_.end(), pchannel)) {
    return StreamingError(
        StreamingCode::kInvalidArgument,
        absl::StrCat("pchannel '", ToAbsl(pchannel), "' does not exist in this cluster"));
  }
  return StreamingError(StreamingCode::kChannelNotExist,
                        absl::StrCat("pchannel '", ToAbsl(pchannel), "' is not on this node"));
}

std::vector<WalRegistry::PChannelInfo> DynamicWalRegistry::List() const {
  absl::MutexLock l(&mu_);
  std::vector<PChannelInfo> out;
  out.reserve(wals_.size());
  for (const auto& [name, w] : wals_) out.push_back({name, w->term(), w->readers()});
  return out;
}

std::shared_ptr<wal::Wal> DynamicWalRegistry::Put(std::shared_ptr<wal::Wal> wal) {
  absl::MutexLock l(&mu_);
  std::shared_ptr<wal::Wal>& slot = wals_[wal->pchannel()];
  std::swap(slot, wal);
  return wal;
}

std::shared_ptr<wal::Wal> DynamicWalRegistry::Remove(std::string_view pchannel) {
  absl::MutexLock l(&mu_);
  auto it = wals_.find(pchannel);
  if (it == wals_.end()) return nullptr;
  std::shared_ptr<wal::Wal> out = std::move(it->second);
  wals_.erase(it);
  return out;
}

absl::StatusOr<std::shared_ptr<wal::Wal>> GetAtTerm(const WalRegistry& registry,
                                                    std::string_view pchannel, int64_t term) {
  absl::StatusOr<std::shared_ptr<wal::Wal>> wal = registry.Get(pchannel);
  if (!wal.ok() || term == 0 || Term(term) == (*wal)->term()) return wal;
  return StreamingError(StreamingCode::kUnmatchedChannelTerm,
                        absl::StrCat("pchannel ", ToAbsl(pchannel), " is at term ",
                                     (*wal)->term().value(), ", request has ", term));
}

}  // namespace kf::streaming::node
