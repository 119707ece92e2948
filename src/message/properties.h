// The reserved message property keys of docs/semantics.md §2 and the property map type.
//
// Keys starting with '_' belong to the system; user-supplied keys must not use them (see
// validate.h).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kf {
namespace prop {

inline constexpr std::string_view kVersion = "_v";              // decimal, "2"
inline constexpr std::string_view kType = "_t";                 // decimal MessageType number
inline constexpr std::string_view kTimeTick = "_tt";            // base-36 uint64
inline constexpr std::string_view kLastConfirmed = "_lc";       // base64(MessageId::Encode())
inline constexpr std::string_view kLastConfirmedSelf = "_lcs";  // empty: LCMID == own id
inline constexpr std::string_view kVChannel = "_vc";            // absent = pchannel-level
inline constexpr std::string_view kWalTerm = "_wt";             // base-36
inline constexpr std::string_view kHeader = "_h";               // base64 proto, type-specific
inline constexpr std::string_view kTxn = "_tx";                 // base64 TxnContext
inline constexpr std::string_view kBroadcast = "_bh";           // base64 BroadcastHeader
inline constexpr std::string_view kReplicate = "_rh";           // base64 ReplicateHeader
inline constexpr std::string_view kNoReplicate = "_ur";         // empty
inline constexpr std::string_view kNotPersisted = "_np";        // empty (TimeTick only)
inline constexpr std::string_view kTraceContext = "_tc";        // base64 TraceContextHeader
inline constexpr std::string_view kIdempotencyKey = "_ik";      // "<producer-id>:<sequence>"

// The message version this build writes.
inline constexpr std::string_view kCurrentVersion = "2";

}  // namespace prop

// True for keys owned by the system (they start with '_').
inline bool IsReservedKey(std::string_view key) { return !key.empty() && key.front() == '_'; }

// A message's properties: a map from key to value, kept as one vector sorted by key. Sorted so
// that encoding is deterministic (map entries are written in key order); flat because a message
// has a handful of properties and every append and every read builds them: a tree paid one node
// allocation per property (and freed it on another thread) plus pointer-chasing lookups. Reads
// take std::string_view keys. Thread-safety: none (a value type).
class Properties {
 public:
  using value_type = std::pair<std::string, std::string>;
  using const_iterator = std::vector<value_type>::const_iterator;

  Properties() = default;
  // As std::map: the first of duplicate keys wins.
  Properties(std::initializer_list<value_type> entries);

  const_iterator begin() const { return entries_.begin(); }
  const_iterator end() const { return entries_.end(); }
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  void reserve(size_t n) { entries_.reserve(n); }

  const_iterator find(std::string_view key) const;
  bool contains(std::string_view key) const { return find(key) != end(); }
  // REQUIRES: contains(key) (throws std::out_of_range otherwise, as std::map::at).
  const std::string& at(std::string_view key) const;

  // Inserts unless `key` is present; false (and nothing changed) if it was.
  bool emplace(std::string key, std::string value);
  void insert_or_assign(std::string key, std::string value);
  // As insert_or_assign, for a value the caller has as bytes: an existing entry's string is
  // reused, so overwriting allocates nothing (the stamping hot path).
  void Assign(std::string_view key, std::string_view value);
  // The value of `key`, inserted empty if absent.
  std::string& operator[](std::string_view key);
  // Number of entries removed (0 or 1).
  size_t erase(std::string_view key);

  // Replaces the contents with `entries` in any order (a decoder's: the wire may list them in
  // any order, and inserting each in place would be quadratic). A repeated key is returned and
  // leaves the properties unchanged.
  std::optional<std::string> Adopt(std::vector<value_type> entries);
  // Moves the entries out (in key order); the properties are left empty.
  std::vector<value_type> TakeEntries() { return std::exchange(entries_, {}); }

  friend bool operator==(const Properties&, const Properties&) = default;

 private:
  std::vector<value_type>::iterator LowerBound(std::string_view key);

  std::vector<value_type> entries_;  // strictly ascending keys
};

}  // namespace kf
