// Context: the explicit, Go-style carrier of the current span through call chains and async
// work (no thread-local "current span": WAL tracing follows message causality, not threads).
//
// Thread-safety: an immutable value; copies may be used from any thread.
// Ownership: shares the current span (std::shared_ptr); copying costs one refcount.
// Errors: none. A default Context is the background context (no span); span() then returns a
// shared no-op span with an invalid context, never null.
// Extensible: later work adds cancellation; keep members private and add With* builders.
#pragma once

#include <memory>

#include "trace/span.h"
#include "trace/span_context.h"

namespace kf::trace {

class Context {
 public:
  Context() = default;

  // A copy whose current span is `span` (a null span gives the background span).
  Context WithSpan(std::shared_ptr<Span> span) const;
  // A copy whose current span is a non-recording span wrapping `sc`, marked remote. An invalid
  // `sc` returns an unchanged copy.
  Context WithRemoteParent(const SpanContext& sc) const;

  // Never null: a shared no-op span when there is none.
  const std::shared_ptr<Span>& span() const;
  // Invalid when there is no span.
  SpanContext span_context() const;

 private:
  std::shared_ptr<Span> span_;
};

}  // namespace kf::trace
