// Pieces of the Prometheus text exposition format 0.0.4 shared by the metric types and the
// Registry: name validation, escaping and number formatting.
// https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
//
// Pure functions: thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kf::metrics {

// The Content-Type of a rendered Registry.
inline constexpr std::string_view kTextContentType = "text/plain; version=0.0.4; charset=utf-8";

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool IsValidMetricName(std::string_view name);
// [a-zA-Z_][a-zA-Z0-9_]*, not starting with "__" (reserved by Prometheus).
bool IsValidLabelName(std::string_view name);

// HELP text: `\` -> `\\`, newline -> `\n`.
std::string EscapeHelp(std::string_view help);
// Label value: `\` -> `\\`, `"` -> `\"`, newline -> `\n`.
std::string EscapeLabelValue(std::string_view value);

// `a="x",b="y"` for names[i]=values[i] (values escaped), without braces. REQUIRES: same size.
std::string FormatLabels(const std::vector<std::string>& names,
                         const std::vector<std::string>& values);

// A sample value as Prometheus parses it: shortest round-trip decimal, "+Inf", "-Inf", "NaN".
std::string FormatValue(double v);
std::string FormatValue(uint64_t v);

// Appends one sample line `name{labels} value\n` (no braces when `labels` is empty).
void AppendSample(std::string* out, std::string_view name, std::string_view labels,
                  std::string_view value);

}  // namespace kf::metrics
