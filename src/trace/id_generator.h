// Random trace and span ids (W3C: span ids random, trace ids random in at least the right-most
// 7 bytes; ours are random in all 16). A per-thread generator keeps the hot path lock-free.
//
// Thread-safety: safe from any thread (thread-local state). Never returns an all-zero id.
#pragma once

#include "trace/span_context.h"

namespace kf::trace {

TraceId GenerateTraceId() noexcept;
SpanId GenerateSpanId() noexcept;

}  // namespace kf::trace
