// MessageId: the position of a message in one pchannel's WAL, as assigned by its backend
// (docs/semantics.md §1). The type is the public API's (include/kingfisher/types.h, where its
// byte and text forms are described); the implementation is message_id.cc.
#pragma once

#include "kingfisher/types.h"

namespace kf {

using kingfisher::MessageId;
using kingfisher::WalKind;

}  // namespace kf
