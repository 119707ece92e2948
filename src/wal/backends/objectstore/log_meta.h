// The metadata-store side of an objectstore log: its ObjectLogMeta, read and replaced only by
// compare-and-swap on the key's mod revision, so that concurrent writers (an old owner rolling
// a segment, a new owner fencing) are serialised by the store.
//
// Pure functions over a borrowed MetaStore; thread-safe.
// Errors: the store's (UNAVAILABLE, DEADLINE_EXCEEDED: a CAS may have been applied), DATA_LOSS
// for a value that does not parse.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/backoff.h"
#include "kingfisher/v1/wal_meta.pb.h"
#include "storage/meta/meta_store.h"

namespace kf::wal::objectstore {

struct VersionedMeta {
  kingfisher::v1::ObjectLogMeta meta;
  int64_t mod_revision = 0;  // 0: the key does not exist yet
};

// The log's metadata; an empty meta at revision 0 if the log was never opened for writing.
absl::StatusOr<VersionedMeta> LoadMeta(meta::MetaStore* store, std::string_view key,
                                       absl::Time deadline);

// Replaces the metadata with `next` if it is still at `expected.mod_revision`. The new
// VersionedMeta, or nullopt when someone else changed it first (re-read and decide). Finding
// exactly `next` there counts as success: the retry of a CAS that was applied unanswered.
absl::StatusOr<std::optional<VersionedMeta>> CasMeta(meta::MetaStore* store, std::string_view key,
                                                     int64_t expected_revision,
                                                     const kingfisher::v1::ObjectLogMeta& next,
                                                     absl::Time deadline);

// Retries `fn` (returning a Status or StatusOr) while it fails with UNAVAILABLE, with backoff,
// until `deadline`.
template <typename Fn>
auto RetryUnavailable(absl::Time deadline, Fn fn) -> decltype(fn()) {
  return RetryWithBackoff(
      deadline, [](const absl::Status& s) { return absl::IsUnavailable(s); }, std::move(fn));
}

}  // namespace kf::wal::objectstore
