#include "common/metrics/exposition.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace kf::metrics {
namespace {

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool IsValidMetricName(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!(IsAlpha(c) || c == '_' || c == ':' || (i > 0 && IsDigit(c)))) return false;
  }
  return true;
}

bool IsValidLabelName(std::string_view name) {
  if (name.empty() || name.starts_with("__")) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!(IsAlpha(c) || c == '_' || (i > 0 && IsDigit(c)))) return false;
  }
  return true;
}

std::string EscapeHelp(std::string_view help) {
  std::string out;
  out.reserve(help.size());
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatLabels(const std::vector<std::string>& names,
                         const std::vector<std::string>& values) {
  if (names.size() != values.size()) {
    std::fprintf(stderr, "FATAL: metrics: %zu label names but %zu values\n", names.size(),
                 values.size());
    std::abort();
  }
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    out += names[i];
    out += "=\"";
    out += EscapeLabelValue(values[i]);
    out += '"';
  }
  return out;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  // The shortest digits that parse back to the same double; plain decimals in the range people
  // read (0.0001 rather than 1e-04 for `le` values, 1048576 for a size), exponents outside it.
  const double mag = std::fabs(v);
  const bool fixed = mag == 0 || (mag >= 1e-4 && mag < 1e21);
  auto [end, ec] = fixed ? std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed)
                         : std::to_chars(buf, buf + sizeof(buf), v);
  if (ec != std::errc()) return "NaN";  // cannot happen with 64 bytes
  return std::string(buf, end);
}

std::string FormatValue(uint64_t v) { return std::to_string(v); }

void AppendSample(std::string* out, std::string_view name, std::string_view labels,
                  std::string_view value) {
  out->append(name);
  if (!labels.empty()) {
    out->push_back('{');
    out->append(labels);
    out->push_back('}');
  }
  out->push_back(' ');
  out->append(value);
  out->push_back('\n');
}

}  // namespace kf::metrics
