// StrongId<Tag, T>: a typed wrapper around an integer so a Term cannot be passed where a
// TimeTick is expected (Redpanda's named types). The template is the public API's
// (include/kingfisher/types.h); the server's own ids are declared here.
#pragma once

#include <cstdint>

#include "kingfisher/types.h"

namespace kf {

template <typename Tag, typename T = uint64_t>
using StrongId = kingfisher::StrongId<Tag, T>;

struct TermTag {};
// The ownership generation of a pchannel; grows on every reassignment (docs/semantics.md §1).
using Term = StrongId<TermTag, int64_t>;

struct SegmentIdTag {};
using SegmentId = StrongId<SegmentIdTag, uint64_t>;

using TxnId = kingfisher::TxnId;

}  // namespace kf
