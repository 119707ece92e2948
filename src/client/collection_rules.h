// The client's cheap, certain checks of collection calls (include/kingfisher/collections.h),
// run before anything is sent: names, dim, shard count and metric. They repeat the server's
// catalog rules (src/streaming/ddl/catalog_rules.h, src/message/payload.h limits) so that a
// bad argument fails at once with a precise message; the server still checks everything.
//
// Pure functions: thread-safe. Errors: StreamingError(kInvalidArgument, naming the field).
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kingfisher/collections.h"
#include "kingfisher/v1/message.pb.h"

namespace kf::client {

inline constexpr size_t kMaxCollectionNameLength = 255;

// 1..255 characters of [A-Za-z0-9_], not starting with a digit. `what` names the field
// ("collection", "partition", "database") in the error.
absl::Status CheckCollectionName(std::string_view what, std::string_view name);

// "L2" | "IP" | "COSINE", in any letter case.
absl::StatusOr<kingfisher::v1::MetricType> ParseMetric(std::string_view metric);

// The name, dim (1..kMaxDim), shards (1..kMaxShards) and metric of `spec`; the metric as its
// wire enum.
absl::StatusOr<kingfisher::v1::MetricType> CheckCollectionSpec(
    const kingfisher::CollectionSpec& spec);

}  // namespace kf::client
