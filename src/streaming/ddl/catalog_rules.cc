#include "streaming/ddl/catalog_rules.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"

namespace kf::streaming::ddl {

absl::Status CheckName(std::string_view what, std::string_view name) {
  bool ok = !name.empty() && name.size() <= kMaxNameLength && !absl::ascii_isdigit(name[0]);
  for (char c : name) ok = ok && (absl::ascii_isalnum(c) || c == '_');
  if (ok) return absl::OkStatus();
  return StreamingError(
      StreamingCode::kInvalidArgument,
      absl::StrCat(ToAbsl(what), " name '", ToAbsl(name.substr(0, 64)), "' must be 1..",
                   kMaxNameLength, " letters, digits or '_', not starting with a digit"));
}

std::vector<std::string> PlaceShards(const std::vector<std::string>& pchannels,
                                     std::map<std::string, int64_t> load, int64_t collection_id,
                                     uint32_t shards) {
  std::vector<std::string> out;
  for (uint32_t shard = 0; shard < shards; ++shard) {
    const std::string* best = &pchannels.front();
    for (const std::string& p : pchannels) {
      if (load[p] < load[*best]) best = &p;
    }
    ++load[*best];
    out.push_back(absl::StrCat(*best, "_", collection_id, "v", shard));
  }
  return out;
}

}  // namespace kf::streaming::ddl
