// JsonWriter: a minimal streaming JSON serializer for kfctl's stable output (docs/semantics.md §8).
//
// Produces compact JSON (no spaces) with commas placed automatically. Strings are escaped per
// RFC 8259: '"', '\\' and control characters (as \b \f \n \r \t or \u00XX); bytes that are not
// valid UTF-8 become U+FFFD so the output is always valid UTF-8 JSON. Large integers that must
// survive JavaScript (ids, timeticks) are written as strings by the caller.
//
// Thread-safety: none (one writer per output line). Ownership: owns its buffer.
// Errors: misuse (a value where a key is required, unbalanced End*) is a programming error
// caught by assert in debug builds; it never throws.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kf::cli {

// `s` as a JSON string literal, quotes included.
std::string JsonQuote(std::string_view s);

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  // Inside an object: the next member's name.
  JsonWriter& Key(std::string_view key);
  JsonWriter& String(std::string_view v);
  JsonWriter& Int(int64_t v);
  JsonWriter& Uint(uint64_t v);
  // Shortest text that reads back as the same float; null for NaN and infinities.
  JsonWriter& Float(float v);
  JsonWriter& Bool(bool v);
  JsonWriter& Null();

  const std::string& str() const { return out_; }

 private:
  void BeforeValue();

  std::string out_;
  // One entry per open container: true once it holds an element (a comma is needed next).
  std::vector<bool> has_element_;
  bool after_key_ = false;
};

}  // namespace kf::cli
