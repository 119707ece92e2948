// Debian 12's abseil is built with ABSL_OPTION_USE_STD_STRING_VIEW=0 (and the same for
// optional/variant): absl::string_view is its own type and std::string_view does not convert
// to it implicitly. Our code speaks std::string_view; these two functions cross the border.
#pragma once

#include <string_view>

#include "absl/strings/string_view.h"

namespace kf {
inline absl::string_view ToAbsl(std::string_view s) { return {s.data(), s.size()}; }
inline std::string_view ToStd(absl::string_view s) { return {s.data(), s.size()}; }
}  // namespace kf
