// Ensemble choice for a new segment: 3 of the known logstores (the static list, or the live
// registrations in the metadata store), rotated by segment id to spread load, with those whose
// last call failed put last, so a dead logstore is replaced whenever 3 others are known.
//
// Thread-safety: a function. Errors: UNAVAILABLE with fewer than 3 logstores known, the
// metadata store's errors.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "wal/backends/quorum/logstore_client.h"
#include "wal/backends/quorum/quorum_opener.h"

namespace kf::wal::quorum {

inline constexpr size_t kEnsembleSize = 3;

absl::StatusOr<std::vector<std::string>> ChooseEnsemble(const QuorumOpenerOptions& options,
                                                        LogStorePool* pool, uint64_t segment);

}  // namespace kf::wal::quorum
