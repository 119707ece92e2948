#include "wal/backends/objectstore/log_meta.h"

#include "absl/strings/str_cat.h"
#include "common/absl_compat.h"
#include "common/errors.h"

namespace kf::wal::objectstore {

absl::StatusOr<VersionedMeta> LoadMeta(meta::MetaStore* store, std::string_view key,
                                       absl::Time deadline) {
  auto got = store->Get(key, deadline);
  if (absl::IsNotFound(got.status())) return VersionedMeta{};
  if (!got.ok()) return got.status();
  VersionedMeta out;
  if (!out.meta.ParseFromString(got->kv.value)) {
    return StreamingError(StreamingCode::kDataLoss, absl::StrCat("objectstore WAL metadata at ",
                                                                 ToAbsl(key), " does not parse"));
  }
  out.mod_revision = got->kv.mod_revision;
  return out;
}

absl::StatusOr<std::optional<VersionedMeta>> CasMeta(meta::MetaStore* store, std::string_view key,
                                                     int64_t expected_revision,
                                                     const kingfisher::v1::ObjectLogMeta& next,
                                                     absl::Time deadline) {
  const std::string k(key);
  const std::string value = next.SerializeAsString();
  const meta::Compare cmp = expected_revision == 0
                                ? meta::Compare::Absent(k)
                                : meta::Compare::ModRevisionIs(k, expected_revision);
  auto r = store->Txn({cmp}, {meta::Op::Put(k, value)}, {meta::Op::Get(k)}, deadline);
  if (!r.ok()) return r.status();
  if (r->succeeded) return std::optional<VersionedMeta>(VersionedMeta{next, r->revision});
  // A retry of a CAS whose first attempt was applied but not answered finds its own value.
  if (!r->results.empty() && r->results[0].kvs.size() == 1 && r->results[0].kvs[0].value == value) {
    return std::optional<VersionedMeta>(VersionedMeta{next, r->results[0].kvs[0].mod_revision});
  }
  return std::optional<VersionedMeta>();
}

}  // namespace kf::wal::objectstore
