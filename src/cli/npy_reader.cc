#include "cli/npy_reader.h"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/absl_compat.h"
#include "common/coding.h"
#include "message/payload.h"

namespace kf::cli {
namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

absl::Status Invalid(std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(".npy: ", ToAbsl(message)));
}

// A value of the header dict: the subset of Python literals .npy headers use.
struct PyValue {
  enum class Kind { kString, kBool, kTuple };
  Kind kind = Kind::kString;
  std::string str;
  bool boolean = false;
  std::vector<uint64_t> ints;
};

// Parses the header, a Python dict literal such as
//   {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
// followed by padding spaces and a newline. Strict: only strings without escapes, True/False
// and tuples of non-negative integers are values; nothing but whitespace after the '}'.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  absl::StatusOr<std::map<std::string, PyValue>> ParseDict() {
    SkipSpace();
    if (!Consume('{')) return Error("expected '{'");
    std::map<std::string, PyValue> out;
    SkipSpace();
    while (!Consume('}')) {
      auto key = ParseString();
      if (!key.ok()) return key.status();
      SkipSpace();
      if (!Consume(':')) return Error("expected ':'");
      SkipSpace();
      auto value = ParseValue();
      if (!value.ok()) return value.status();
      if (!out.emplace(*key, *std::move(value)).second) {
        return Error(absl::StrCat("duplicate key '", *key, "'"));
      }
      SkipSpace();
      if (Consume(',')) {
        SkipSpace();
      } else if (Peek() != '}') {
        return Error("expected ',' or '}'");
      }
    }
    SkipSpace();
    if (pos_ != s_.size()) return Error("unexpected text after the dict");
    return out;
  }

 private:
  absl::Status Error(std::string_view what) const {
    return Invalid(absl::StrCat("malformed header: ", ToAbsl(what), " at header offset ", pos_));
  }
  char Peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool Consume(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void SkipSpace() {
    while (pos_ < s_.size() &&
           (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  absl::StatusOr<std::string> ParseString() {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    ++pos_;
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\') return Error("escapes in strings are not supported");
      if (s_[pos_] == '\n') return Error("unterminated string");
      ++pos_;
    }
    if (pos_ == s_.size()) return Error("unterminated string");
    std::string out(s_.substr(start, pos_ - start));
    ++pos_;  // the closing quote
    return out;
  }

  absl::StatusOr<PyValue> ParseValue() {
    PyValue v;
    const char c = Peek();
    if (c == '\'' || c == '"') {
      auto s = ParseString();
      if (!s.ok()) return s.status();
      v.str = *std::move(s);
      return v;
    }
    if (c == '(') return ParseTuple();
    if (c == '[') return Error("lists (structured dtypes) are not supported");
    const size_t start = pos_;
    while (pos_ < s_.size() &&
           (absl::ascii_isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
      ++pos_;
    }
    const std::string_view word = s_.substr(start, pos_ - start);
    if (word == "True" || word == "False") {
      v.kind = PyValue::Kind::kBool;
      v.boolean = word == "True";
      return v;
    }
    pos_ = start;
    return Error("expected a string, True, False or a tuple");
  }

  absl::StatusOr<PyValue> ParseTuple() {
    PyValue v;
    v.kind = PyValue::Kind::kTuple;
    ++pos_;  // '('
    bool comma = false;
    SkipSpace();
    while (!Consume(')')) {
      const size_t start = pos_;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
      uint64_t n = 0;
      if (pos_ == start) return Error("expected a non-negative integer");
      if (!absl::SimpleAtoi(ToAbsl(s_.substr(start, pos_ - start)), &n)) {
        pos_ = start;
        return Error("integer out of range");
      }
      v.ints.push_back(n);
      SkipSpace();
      if (Consume(',')) {
        comma = true;
        SkipSpace();
      } else if (Peek() != ')') {
        return Error("expected ',' or ')'");
      }
    }
    // "(3)" is the integer 3 in Python, not a tuple.
    if (v.ints.size() == 1 && !comma) return Error("'(n)' is not a tuple (write '(n,)')");
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

std::string ShapeText(const std::vector<uint64_t>& shape) {
  if (shape.size() == 1) return absl::StrCat("(", shape[0], ",)");
  return absl::StrCat("(", absl::StrJoin(shape, ", "), ")");
}

// The header dict's three fields, checked.
struct Header {
  size_t itemsize = 0;  // 4: '<f4', 8: '<f8'
  uint64_t rows = 0;
  uint32_t dim = 0;
};

absl::StatusOr<Header> CheckHeader(const std::map<std::string, PyValue>& dict) {
  for (const auto& [key, value] : dict) {
    if (key != "descr" && key != "fortran_order" && key != "shape") {
      return Invalid(absl::StrCat("unexpected header key '", key, "'"));
    }
  }
  for (std::string_view key : {"descr", "fortran_order", "shape"}) {
    if (!dict.contains(std::string(key))) {
      return Invalid(absl::StrCat("header has no '", ToAbsl(key), "'"));
    }
  }
  Header h;
  const PyValue& descr = dict.at("descr");
  if (descr.kind != PyValue::Kind::kString) return Invalid("'descr' must be a string");
  if (descr.str == "<f4") {
    h.itemsize = 4;
  } else if (descr.str == "<f8") {
    h.itemsize = 8;
  } else {
    return Invalid(absl::StrCat("dtype '", descr.str.substr(0, 32),
                                "' is not supported (want '<f4' float32 or '<f8' float64)"));
  }
  const PyValue& fortran = dict.at("fortran_order");
  if (fortran.kind != PyValue::Kind::kBool) return Invalid("'fortran_order' must be True or False");
  if (fortran.boolean) {
    return Invalid("fortran_order True (column-major) is not supported; save a C-order array");
  }
  const PyValue& shape = dict.at("shape");
  if (shape.kind != PyValue::Kind::kTuple) return Invalid("'shape' must be a tuple");
  if (shape.ints.size() != 2) {
    return Invalid(absl::StrCat("shape ", ShapeText(shape.ints), " has rank ", shape.ints.size(),
                                ", want 2: (rows, dim)"));
  }
  if (shape.ints[0] == 0) return Invalid("shape has 0 rows");
  if (shape.ints[1] == 0 || shape.ints[1] > kMaxDim) {
    return Invalid(absl::StrCat("shape ", ShapeText(shape.ints), ": dim must be 1..", kMaxDim));
  }
  h.rows = shape.ints[0];
  h.dim = static_cast<uint32_t>(shape.ints[1]);
  return h;
}

}  // namespace

absl::StatusOr<Vectors> ParseNpy(std::string_view bytes) {
  if (bytes.size() < kMagic.size() || bytes.substr(0, kMagic.size()) != kMagic) {
    return Invalid("not a .npy file (bad magic)");
  }
  if (bytes.size() < kMagic.size() + 2) return Invalid("truncated before the version");
  const uint8_t major = static_cast<uint8_t>(bytes[6]);
  const uint8_t minor = static_cast<uint8_t>(bytes[7]);
  if (major < 1 || major > 3 || minor != 0) {
    return Invalid(
        absl::StrCat("unsupported format version ", major, ".", minor, " (want 1.0, 2.0 or 3.0)"));
  }
  const size_t len_size = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + len_size) return Invalid("truncated before the header length");
  const uint64_t header_len =
      major == 1 ? DecodeFixed16(bytes.data() + 8) : DecodeFixed32(bytes.data() + 8);
  const size_t header_start = 8 + len_size;
  if (bytes.size() - header_start < header_len) {
    return Invalid(absl::StrCat("truncated header: its length is ", header_len, " but only ",
                                bytes.size() - header_start, " bytes follow"));
  }
  const std::string_view header = bytes.substr(header_start, header_len);
  if (header.empty() || header.back() != '\n') return Invalid("header does not end with '\\n'");
  auto dict = HeaderParser(header).ParseDict();
  if (!dict.ok()) return dict.status();
  auto h = CheckHeader(*dict);
  if (!h.ok()) return h.status();

  const std::string_view data = bytes.substr(header_start + header_len);
  uint64_t values = 0, want = 0;
  if (__builtin_mul_overflow(h->rows, uint64_t{h->dim}, &values) ||
      __builtin_mul_overflow(values, uint64_t{h->itemsize}, &want)) {
    return Invalid(absl::StrCat("shape (", h->rows, ", ", h->dim, ") is too large"));
  }
  if (data.size() < want) {
    return Invalid(absl::StrCat("data truncated: shape (", h->rows, ", ", h->dim, ") needs ", want,
                                " bytes, the file has ", data.size()));
  }
  if (data.size() > want) {
    return Invalid(absl::StrCat(data.size() - want, " bytes after the data of shape (", h->rows,
                                ", ", h->dim, ")"));
  }
  Vectors out;
  out.rows = h->rows;
  out.dim = h->dim;
  out.values.resize(values);
  for (uint64_t i = 0; i < values; ++i) {
    const char* p = data.data() + i * h->itemsize;
    float v;
    if (h->itemsize == 4) {
      v = std::bit_cast<float>(DecodeFixed32(p));
    } else {
      const double d = std::bit_cast<double>(DecodeFixed64(p));
      if (std::isfinite(d) && std::fabs(d) > std::numeric_limits<float>::max()) {
        return Invalid(absl::StrCat("row ", i / h->dim, ", column ", i % h->dim, ": ", d,
                                    " does not fit a float32"));
      }
      v = static_cast<float>(d);
    }
    if (!std::isfinite(v)) {
      return Invalid(absl::StrCat("row ", i / h->dim, ", column ", i % h->dim,
                                  ": the value is not finite (nan or inf)"));
    }
    out.values[i] = v;
  }
  return out;
}

}  // namespace kf::cli
