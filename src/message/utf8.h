// UTF-8 well-formedness, as proto3 requires of `string` fields (message properties are a
// proto3 map<string,string>, so a property that is not UTF-8 would not parse elsewhere).
// Pure function: thread-safe.
#pragma once

#include <string_view>

namespace kf {

// True when `s` is well-formed UTF-8: no overlong forms, no surrogates, nothing above
// U+10FFFF, no truncated sequences. NUL bytes are allowed (they are valid code points).
bool IsValidUtf8(std::string_view s);

}  // namespace kf
