#include "cli/csv_reader.h"

#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "message/payload.h"

namespace kf::cli {
namespace {

absl::Status Invalid(std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(".csv: ", ToAbsl(message)));
}

std::string_view TrimBlanks(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// A decimal float literal: [+-] digits [. digits] [(e|E) [+-] digits], with at least one digit
// in the mantissa. absl::SimpleAtof alone would also take "nan", "inf" and hex floats.
bool IsDecimalFloat(std::string_view s) {
  size_t i = 0;
  auto digits = [&]() {
    const size_t start = i;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - start;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

std::string Quoted(std::string_view s) {
  constexpr size_t kMax = 32;
  std::string out = absl::CHexEscape(ToAbsl(s.substr(0, kMax)));
  return absl::StrCat("'", out, s.size() > kMax ? "...'" : "'");
}

}  // namespace

absl::StatusOr<Vectors> ParseCsv(std::string_view text) {
  if (text.empty()) return Invalid("no rows");
  if (text.back() == '\n') text.remove_suffix(1);  // the optional final newline
  Vectors out;
  uint64_t line_no = 0;
  size_t pos = 0;
  while (true) {
    ++line_no;
    const size_t end = std::min(text.find('\n', pos), text.size());
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (TrimBlanks(line).empty()) {
      return Invalid(absl::StrCat("line ", line_no, ": blank line (not allowed)"));
    }
    uint32_t width = 0;
    size_t field_start = 0;
    while (true) {
      const size_t comma = std::min(line.find(',', field_start), line.size());
      const std::string_view field = TrimBlanks(line.substr(field_start, comma - field_start));
      ++width;
      if (out.dim != 0 && width > out.dim) {
        return Invalid(absl::StrCat("line ", line_no, ": more than ", out.dim, " values, want ",
                                    out.dim, " (the width of line 1)"));
      }
      if (width > kMaxDim) {
        return Invalid(absl::StrCat("line ", line_no, ": more than ", kMaxDim, " values"));
      }
      float v = 0;
      if (field.empty()) {
        return Invalid(absl::StrCat("line ", line_no, ", value ", width, ": empty"));
      }
      if (!IsDecimalFloat(field) || !absl::SimpleAtof(ToAbsl(field), &v)) {
        return Invalid(
            absl::StrCat("line ", line_no, ", value ", width, ": not a number: ", Quoted(field)));
      }
      if (!std::isfinite(v)) {
        return Invalid(absl::StrCat("line ", line_no, ", value ", width, ": ", Quoted(field),
                                    " is out of float32 range"));
      }
      out.values.push_back(v);
      if (comma == line.size()) break;
      field_start = comma + 1;
    }
    if (out.dim == 0) {
      out.dim = width;
    } else if (width != out.dim) {
      return Invalid(absl::StrCat("line ", line_no, ": ", width, " values, want ", out.dim,
                                  " (the width of line 1)"));
    }
    ++out.rows;
    if (end == text.size()) break;
    pos = end + 1;
  }
  return out;
}

}  // namespace kf::cli
