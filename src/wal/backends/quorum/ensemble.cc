#include "wal/backends/quorum/ensemble.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "kingfisher/v1/logstore.pb.h"

namespace kf::wal::quorum {

absl::StatusOr<std::vector<std::string>> ChooseEnsemble(const QuorumOpenerOptions& options,
                                                        LogStorePool* pool, uint64_t segment) {
  std::vector<std::string> candidates = options.logstores;
  if (candidates.empty()) {
    ASSIGN_OR_RETURN(auto range, options.meta->Range(options.registry_prefix,
                                                     absl::Now() + options.rpc_timeout));
    for (const auto& kv : range.kvs) {
      kingfisher::v1::LogStoreRegistration reg;
      if (reg.ParseFromString(kv.value) && !reg.address().empty()) {
        candidates.push_back(reg.address());
      }
    }
  }
  std::sort(candidates.begin(), candidates.end());
  candidates.erase(std::unique(candidates.begin(), candidates.end()), candidates.end());
  if (candidates.size() < kEnsembleSize) {
    return absl::UnavailableError(absl::StrCat("quorum WAL: needs ", kEnsembleSize, " logstores, ",
                                               candidates.size(), " known"));
  }
  std::rotate(candidates.begin(),
              candidates.begin() + static_cast<ptrdiff_t>(segment % candidates.size()),
              candidates.end());
  std::stable_partition(candidates.begin(), candidates.end(),
                        [&](const std::string& a) { return pool->Get(a)->healthy(); });
  candidates.resize(kEnsembleSize);
  return candidates;
}

}  // namespace kf::wal::quorum
