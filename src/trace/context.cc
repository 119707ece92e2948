#include "trace/context.h"

#include <utility>

namespace kf::trace {
namespace {

// The span of the background context: invalid context, records nothing. Shared and immortal so
// span() can return a reference.
const std::shared_ptr<Span>& BackgroundSpan() {
  static const auto* span =
      new std::shared_ptr<Span>(std::make_shared<NonRecordingSpan>(SpanContext{}));
  return *span;
}

}  // namespace

Context Context::WithSpan(std::shared_ptr<Span> span) const {
  Context c(*this);
  c.span_ = std::move(span);
  return c;
}

Context Context::WithRemoteParent(const SpanContext& sc) const {
  if (!sc.IsValid()) return *this;
  SpanContext remote = sc;
  remote.remote = true;
  return WithSpan(MakeNonRecordingSpan(remote));
}

const std::shared_ptr<Span>& Context::span() const { return span_ ? span_ : BackgroundSpan(); }

SpanContext Context::span_context() const { return span_ ? span_->context() : SpanContext{}; }

}  // namespace kf::trace
