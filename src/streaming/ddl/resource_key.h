// ResourceKey: what a broadcast DDL locks (docs/semantics.md §5), and where it sits in the lock
// hierarchy cluster > database > collection.
//
// Keys travel in the broadcast header `_bh` as kingfisher.v1.ResourceKey{domain, key}:
//   cluster     domain "cluster",    key ""
//   database    domain "database",   key "<database>"
//   collection  domain "collection", key "<database>/<collection name>"
// (names never contain '/': the catalog's name rules forbid it, so the split is unambiguous).
// The natural order (domain rank, then key) is the global acquisition order of
// ResourceKeyLocks, which makes sorted acquisition deadlock-free.
//
// Thread-safety: a plain value. Errors: FromProto returns INVALID_ARGUMENT for an unknown
// domain or a key that does not fit its domain.
#pragma once

#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kingfisher/v1/message.pb.h"

namespace kf::streaming::ddl {

enum class ResourceDomain { kCluster = 0, kDatabase = 1, kCollection = 2 };

struct ResourceKey {
  ResourceDomain domain = ResourceDomain::kCluster;
  std::string key;

  static ResourceKey Cluster() { return {ResourceDomain::kCluster, ""}; }
  static ResourceKey Database(std::string_view database);
  static ResourceKey Collection(std::string_view database, std::string_view name);

  // The keys that contain this one: none for the cluster; the cluster for a database; the
  // cluster and the database for a collection.
  std::vector<ResourceKey> Ancestors() const;

  kingfisher::v1::ResourceKey ToProto() const;
  static absl::StatusOr<ResourceKey> FromProto(const kingfisher::v1::ResourceKey& p);
  std::string ToString() const;  // "collection:default/c1"

  auto operator<=>(const ResourceKey&) const = default;
};

std::string_view ResourceDomainName(ResourceDomain d);

}  // namespace kf::streaming::ddl
