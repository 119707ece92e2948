// The vchannel naming rules of docs/semantics.md §1: `<pchannel>_<suffix>` where the pchannel
// matches ^(.+-dml_\d+); a suffix `<collectionID>v<shard>` names one shard of a collection, any
// other suffix a raw vchannel (a plain log: no schema, no payload checks).
//
// Pure functions: thread-safe, no allocation on success. Errors are
// StreamingError(kInvalidArgument, message naming the vchannel).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kf {

// One shard of a collection, as named by its vchannel.
struct CollectionVChannel {
  int64_t collection_id = 0;  // >= 1
  uint32_t shard = 0;         // < kMaxShards (payload.h)
  friend bool operator==(const CollectionVChannel&, const CollectionVChannel&) = default;
};

// The pchannel part of `<pchannel>_<suffix>`, where the pchannel matches ^(.+-dml_\d+) and the
// suffix is non-empty (the longest such pchannel, as the regex's greedy match).
// "kf-dml_0_orders" -> "kf-dml_0". INVALID_ARGUMENT otherwise.
absl::StatusOr<std::string> PChannelOfVChannel(std::string_view vchannel);

// Classifies a vchannel:
// - a CollectionVChannel when the suffix is `<id>v<shard>` in canonical decimal (no sign, no
//   leading zero), 1 <= id <= INT64_MAX and shard < kMaxShards;
// - nullopt for a raw vchannel: a suffix that is not `<digits>v<digits>`;
// - INVALID_ARGUMENT for a name with no pchannel, and for a suffix of that shape that is not
//   canonical or is out of range ("kf-dml_0_042v1", "kf-dml_0_0v0", "kf-dml_0_7v64"): the
//   coordinator never names a collection's vchannel so, and serving it as a raw vchannel would
//   silently skip the collection checks its writer probably expects.
absl::StatusOr<std::optional<CollectionVChannel>> ParseVChannel(std::string_view vchannel);

// True when ParseVChannel returns a CollectionVChannel.
bool IsCollectionVChannel(std::string_view vchannel);

}  // namespace kf
