// Strict W3C `traceparent` (version 00) parsing and formatting.
//
// Parsing fails closed: anything but exactly `00-<32 hex>-<16 hex>-<2 hex>` in lowercase (55
// characters), version ff, an all-zero trace id or an all-zero parent id yields std::nullopt
// and the caller starts a new trace. Parsed contexts are marked remote.
// Thread-safety: pure functions. Errors: std::nullopt only, never throws.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "trace/span_context.h"

namespace kf::trace {

std::optional<SpanContext> ParseTraceparent(std::string_view header);

// "00-<trace id>-<span id>-<flags>"; the caller passes a valid context.
std::string FormatTraceparent(const SpanContext& sc);

}  // namespace kf::trace
