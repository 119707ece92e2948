// Message-carried trace context (docs/tracing.md §2): the `_tc` property primitives and the span
// helpers the WAL uses to follow one message's causal path across processes.
//
// `_tc` = base64(std, padded)(kingfisher.v1.TraceContextHeader{trace_id, span_id, trace_flags}).
// It is written even for unsampled spans (logs still correlate by trace id). TimeTick messages
// are never traced: Inject/Overwrite are no-ops for them and StartSpanForMessage records nothing.
//
// Thread-safety: the functions are thread-safe; a message passed by pointer must be owned
// exclusively by the caller (Inject/Overwrite mutate its properties — never call them on a
// message shared by tailing readers).
// Ownership: messages are borrowed for the duration of the call.
// Errors: none surface. Trace propagation is never a correctness dependency: a missing or
// broken `_tc` leaves the context unchanged.
#pragma once

#include <memory>
#include <string_view>
#include <utility>

#include "message/message.h"
#include "trace/context.h"
#include "trace/span.h"

namespace kf {

// Writes ctx's current span context into `_tc`. No-op when `_tc` exists, when ctx has no valid
// span, for a TimeTick, or for a null message.
void InjectTraceContext(const trace::Context& ctx, MutableMessage* msg);
// As Inject, but replaces an existing `_tc`: only at a semantic ownership boundary.
void OverwriteTraceContext(const trace::Context& ctx, MutableMessage* msg);
// ctx.WithRemoteParent(the `_tc` span context); `ctx` unchanged when `_tc` is missing, not
// base64, not a TraceContextHeader, or has wrong-length / all-zero ids.
trace::Context ExtractTraceContext(const trace::Context& ctx, const MutableMessage& msg);
// Appends to `dst` what OverwriteTraceContext(ctx, copy of msg) and then EncodeTo would, without
// copying the message (a producer's attempt: its own `_tc` on the message it resends).
void EncodeWithTraceContext(const trace::Context& ctx, const MutableMessage& msg, std::string* dst);

// A WAL-scope span (tracer kingfisher.streaming.wal) with no attributes.
std::pair<trace::Context, std::shared_ptr<trace::Span>> StartSpan(
    const trace::Context& ctx, std::string_view name,
    trace::SpanKind kind = trace::SpanKind::kInternal);
// A WAL-scope span with the message attributes of docs/tracing.md §4 (computed only when the span
// records). For a TimeTick or null message: `ctx` itself and a non-recording no-op span.
std::pair<trace::Context, std::shared_ptr<trace::Span>> StartSpanForMessage(
    const trace::Context& ctx, const MutableMessage* msg, std::string_view name,
    trace::SpanKind kind = trace::SpanKind::kInternal);

// The span of a WAL persisting attempt (`wal.appendimpl`) for a message the adaptor encodes
// with `stamp` instead of changing it (AppendStamp): StartSpanForMessage with the attributes of
// the stamped message, then Overwrite into the stamp (its `_tc` text becomes the new span's).
// For a TimeTick: `ctx` itself, a no-op span, and the stamp's `_tc` left empty.
std::pair<trace::Context, std::shared_ptr<trace::Span>> StartSpanForStampedMessage(
    const trace::Context& ctx, const MutableMessage& msg, std::string_view name,
    AppendStamp* stamp);

}  // namespace kf
