// The public client API's TraceContext (include/kingfisher/types.h) in and out of the SDK: the
// library's calls take the caller's context as a plain W3C value and hang their spans under
// it as under a remote parent; consumed messages hand their span's context back the same way.
//
// Thread-safety: pure functions. Errors: none (an invalid context means "no parent").
#pragma once

#include "kingfisher/types.h"
#include "trace/context.h"
#include "trace/span_context.h"

namespace kf::trace {

SpanContext FromPublic(const kingfisher::TraceContext& tc);
kingfisher::TraceContext ToPublic(const SpanContext& sc);
// The background context with `tc` as its remote parent (unchanged when `tc` is not valid).
Context ContextFromPublic(const kingfisher::TraceContext& tc);

}  // namespace kf::trace
