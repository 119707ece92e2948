#include "message/properties.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

// The public Properties (include/kingfisher/properties.h), implemented with the message model.
namespace kingfisher {
namespace {

// Byte-wise, inline: property keys are a few bytes (the reserved ones two or three), where a
// call to memcmp costs more than the comparison.
bool Less(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
  }
  return a.size() < b.size();
}

bool Equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

bool KeyLess(const Properties::value_type& entry, std::string_view key) {
  return Less(entry.first, key);
}

}  // namespace

Properties::Properties(std::initializer_list<value_type> entries) {
  entries_.reserve(entries.size());
  for (const auto& [k, v] : entries) emplace(k, v);
}

std::vector<Properties::value_type>::iterator Properties::LowerBound(std::string_view key) {
  // Messages are built and decoded in key order mostly: check the back before searching.
  if (entries_.empty() || Less(entries_.back().first, key)) return entries_.end();
  return std::lower_bound(entries_.begin(), entries_.end(), key, KeyLess);
}

Properties::const_iterator Properties::find(std::string_view key) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key, KeyLess);
  return it != entries_.end() && Equal(it->first, key) ? it : entries_.end();
}

const std::string& Properties::at(std::string_view key) const {
  auto it = find(key);
  if (it == end()) throw std::out_of_range("no property " + std::string(key));
  return it->second;
}

bool Properties::emplace(std::string key, std::string value) {
  auto it = LowerBound(key);
  if (it != entries_.end() && Equal(it->first, key)) return false;
  entries_.emplace(it, std::move(key), std::move(value));
  return true;
}

void Properties::insert_or_assign(std::string key, std::string value) {
  auto it = LowerBound(key);
  if (it != entries_.end() && Equal(it->first, key)) {
    it->second = std::move(value);
  } else {
    entries_.emplace(it, std::move(key), std::move(value));
  }
}

void Properties::Assign(std::string_view key, std::string_view value) {
  auto it = LowerBound(key);
  if (it != entries_.end() && Equal(it->first, key)) {
    it->second.assign(value);
  } else {
    entries_.emplace(it, std::piecewise_construct, std::forward_as_tuple(key),
                     std::forward_as_tuple(value));
  }
}

std::string& Properties::operator[](std::string_view key) {
  auto it = LowerBound(key);
  if (it == entries_.end() || !Equal(it->first, key)) {
    it = entries_.emplace(it, std::piecewise_construct, std::forward_as_tuple(key),
                          std::forward_as_tuple());
  }
  return it->second;
}

size_t Properties::erase(std::string_view key) {
  auto it = LowerBound(key);
  if (it == entries_.end() || !Equal(it->first, key)) return 0;
  entries_.erase(it);
  return 1;
}

std::optional<std::string> Properties::Adopt(std::vector<value_type> entries) {
  const auto key_less = [](const value_type& a, const value_type& b) { return a.first < b.first; };
  if (!std::is_sorted(entries.begin(), entries.end(), key_less)) {
    std::sort(entries.begin(), entries.end(), key_less);
  }
  auto dup = std::adjacent_find(
      entries.begin(), entries.end(),
      [](const value_type& a, const value_type& b) { return a.first == b.first; });
  if (dup != entries.end()) return dup->first;
  entries_ = std::move(entries);
  return std::nullopt;
}

}  // namespace kingfisher
