// The catalog's input rules: names of databases, collections and partitions, and how the
// shards of a new collection are placed on the cluster's pchannels.
// Pure functions: thread-safe. Errors: StreamingError(kInvalidArgument, naming the field).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace kf::streaming::ddl {

inline constexpr size_t kMaxNameLength = 255;
inline constexpr std::string_view kDefaultDatabase = "default";
inline constexpr std::string_view kDefaultPartition = "_default";

// 1..kMaxNameLength characters of [A-Za-z0-9_], not starting with a digit (so names never
// contain the '/' of resource keys and store keys). `what` names the field in the error.
absl::Status CheckName(std::string_view what, std::string_view name);

// Vchannel names `<pchannel>_<collection_id>v<shard>` for shards 0..shards-1: each shard goes
// to the pchannel with the fewest live vchannels (`load`, counting the shards placed so far),
// ties to the earliest in `pchannels` (the configured order). REQUIRES: pchannels non-empty.
std::vector<std::string> PlaceShards(const std::vector<std::string>& pchannels,
                                     std::map<std::string, int64_t> load, int64_t collection_id,
                                     uint32_t shards);

}  // namespace kf::streaming::ddl
