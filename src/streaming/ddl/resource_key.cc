#include "streaming/ddl/resource_key.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"

namespace kf::streaming::ddl {

ResourceKey ResourceKey::Database(std::string_view database) {
  return {ResourceDomain::kDatabase, std::string(database)};
}

ResourceKey ResourceKey::Collection(std::string_view database, std::string_view name) {
  return {ResourceDomain::kCollection, absl::StrCat(ToAbsl(database), "/", ToAbsl(name))};
}

std::vector<ResourceKey> ResourceKey::Ancestors() const {
  switch (domain) {
    case ResourceDomain::kCluster:
      return {};
    case ResourceDomain::kDatabase:
      return {Cluster()};
    case ResourceDomain::kCollection:
      return {Cluster(), Database(std::string_view(key).substr(0, key.find('/')))};
  }
  return {};
}

std::string_view ResourceDomainName(ResourceDomain d) {
  switch (d) {
    case ResourceDomain::kCluster:
      return "cluster";
    case ResourceDomain::kDatabase:
      return "database";
    case ResourceDomain::kCollection:
      return "collection";
  }
  return "unknown";
}

kingfisher::v1::ResourceKey ResourceKey::ToProto() const {
  kingfisher::v1::ResourceKey p;
  p.set_domain(std::string(ResourceDomainName(domain)));
  p.set_key(key);
  return p;
}

absl::StatusOr<ResourceKey> ResourceKey::FromProto(const kingfisher::v1::ResourceKey& p) {
  for (ResourceDomain d :
       {ResourceDomain::kCluster, ResourceDomain::kDatabase, ResourceDomain::kCollection}) {
    if (p.domain() != ResourceDomainName(d)) continue;
    const size_t slashes = std::count(p.key().begin(), p.key().end(), '/');
    const bool fits = d == ResourceDomain::kCluster ? p.key().empty()
                      : d == ResourceDomain::kDatabase
                          ? !p.key().empty() && slashes == 0
                          : slashes == 1 && p.key().front() != '/' && p.key().back() != '/';
    if (!fits) break;
    return ResourceKey{d, p.key()};
  }
  return StreamingError(StreamingCode::kInvalidArgument,
                        absl::StrCat("bad resource key ", p.domain(), ":", p.key()));
}

std::string ResourceKey::ToString() const {
  return absl::StrCat(ToAbsl(ResourceDomainName(domain)), ":", key);
}

}  // namespace kf::streaming::ddl
