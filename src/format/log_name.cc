#include "format/log_name.h"

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"

namespace kf::format {

absl::Status ValidateLogName(std::string_view name) {
  bool ok = !name.empty() && name.size() <= 100 && name.front() != '.';
  for (char c : name) {
    ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                c == '_' || c == '.' || c == '-');
  }
  if (ok) return absl::OkStatus();
  return StreamingError(StreamingCode::kInvalidArgument,
                        absl::StrCat("bad log (pchannel) name '", ToAbsl(name),
                                     "': want 1..100 bytes of [A-Za-z0-9_.-], not starting "
                                     "with '.'"));
}

}  // namespace kf::format
