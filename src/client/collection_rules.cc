#include "client/collection_rules.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "message/payload.h"

namespace kf::client {
namespace {

absl::Status Invalid(std::string_view message) {
  return StreamingError(StreamingCode::kInvalidArgument, message);
}

}  // namespace

absl::Status CheckCollectionName(std::string_view what, std::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxCollectionNameLength &&
            !absl::ascii_isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name) ok = ok && (absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (ok) return absl::OkStatus();
  return Invalid(absl::StrCat(ToAbsl(what), " name '", ToAbsl(name.substr(0, 64)), "' must be 1..",
                              kMaxCollectionNameLength,
                              " letters, digits or '_', not starting with a digit"));
}

absl::StatusOr<kingfisher::v1::MetricType> ParseMetric(std::string_view metric) {
  const std::string upper = absl::AsciiStrToUpper(ToAbsl(metric));
  if (upper == "L2") return kingfisher::v1::L2;
  if (upper == "IP") return kingfisher::v1::IP;
  if (upper == "COSINE") return kingfisher::v1::COSINE;
  return Invalid(
      absl::StrCat("metric '", ToAbsl(metric.substr(0, 64)), "' must be L2, IP or COSINE"));
}

absl::StatusOr<kingfisher::v1::MetricType> CheckCollectionSpec(
    const kingfisher::CollectionSpec& spec) {
  if (absl::Status s = CheckCollectionName("collection", spec.name); !s.ok()) return s;
  if (spec.dim < 1 || spec.dim > kMaxDim) {
    return Invalid(absl::StrCat("dim ", spec.dim, " must be 1..", kMaxDim));
  }
  if (spec.shards < 1 || spec.shards > kMaxShards) {
    return Invalid(absl::StrCat("shards ", spec.shards, " must be 1..", kMaxShards));
  }
  return ParseMetric(spec.metric);
}

}  // namespace kf::client
