#include "storage/meta/meta_store.h"

#include <utility>

namespace kf::meta {

Compare Compare::Absent(std::string key) { return CreateRevisionIs(std::move(key), 0); }

Compare Compare::Exists(std::string key) {
  return {.key = std::move(key), .target = Target::kCreateRevision, .result = Result::kGreater};
}

Compare Compare::ValueIs(std::string key, std::string value) {
  return {.key = std::move(key), .target = Target::kValue, .value = std::move(value)};
}

Compare Compare::VersionIs(std::string key, int64_t version) {
  return {.key = std::move(key), .target = Target::kVersion, .number = version};
}

Compare Compare::ModRevisionIs(std::string key, int64_t revision) {
  return {.key = std::move(key), .target = Target::kModRevision, .number = revision};
}

Compare Compare::CreateRevisionIs(std::string key, int64_t revision) {
  return {.key = std::move(key), .target = Target::kCreateRevision, .number = revision};
}

Op Op::Get(std::string key) { return {.type = Type::kGet, .key = std::move(key)}; }

Op Op::GetPrefix(std::string prefix) {
  return {.type = Type::kGet, .key = std::move(prefix), .prefix = true};
}

Op Op::Put(std::string key, std::string value, LeaseId lease) {
  return {.type = Type::kPut, .key = std::move(key), .value = std::move(value), .lease = lease};
}

Op Op::Delete(std::string key) { return {.type = Type::kDelete, .key = std::move(key)}; }

Op Op::DeletePrefix(std::string prefix) {
  return {.type = Type::kDelete, .key = std::move(prefix), .prefix = true};
}

std::string PrefixEnd(std::string_view prefix) {
  std::string end(prefix);
  // Drop trailing 0xff bytes (they cannot be incremented), then increment the last byte.
  while (!end.empty() && static_cast<unsigned char>(end.back()) == 0xff) end.pop_back();
  if (!end.empty()) end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
  return end;
}

}  // namespace kf::meta
