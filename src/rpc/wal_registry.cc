#include "rpc/wal_registry.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"

namespace kf::rpc {

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

absl::StatusOr<std::shared_ptr<wal::Wal>> GetAtTerm(const WalRegistry& registry,
                                                    std::string_view pchannel, int64_t term) {
  absl::StatusOr<std::shared_ptr<wal::Wal>> wal = registry.Get(pchannel);
  if (!wal.ok() || term == 0 || Term(term) == (*wal)->term()) return wal;
  return StreamingError(StreamingCode::kUnmatchedChannelTerm,
                        absl::StrCat("pchannel ", ToAbsl(pchannel), " is at term ",
                                     (*wal)->term().value(), ", request has ", term));
}

}  // namespace kf::rpc
