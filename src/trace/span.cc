#include "trace/span.h"

#include <string>

#include "absl/status/status.h"

namespace kf::trace {

Span::~Span() = default;

void Span::RecordError(const absl::Status& s) noexcept {
  if (s.ok() || !IsRecording()) return;
  try {
    std::string message(s.message());
    AddEvent("exception", {{"exception.type", absl::StatusCodeToString(s.code())},
                           {"exception.message", message}});
    SetStatus(SpanStatusCode::kError, message);
  } catch (...) {
    // Out of memory while tracing: tracing never fails the traced operation.
  }
}

}  // namespace kf::trace
