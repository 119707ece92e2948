// QuorumMeta: the quorum backend's metadata of one log in the MetaStore (docs/quorum-wal.md):
//
//   <prefix>/<log>/owner              QuorumLogMeta {term, epoch}: bumped by every writer open
//   <prefix>/<log>/seg/<20 digits>    QuorumSegmentMeta {ensemble, epoch, sealed, end, bytes}
//
// Every change a writer makes after Claim is a Txn guarded by the owner key's mod_revision, so
// a writer that another open superseded can change nothing (FENCED).
//
// Thread-safety: thread-compatible (each backend serialises its metadata calls). Ownership:
// borrows the store. Errors: the store's (UNAVAILABLE, DEADLINE_EXCEEDED), FENCED, DATA_LOSS for
// a value that does not parse.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "common/strong_id.h"
#include "kingfisher/v1/logstore.pb.h"
#include "storage/meta/meta_store.h"

namespace kf::wal::quorum {

struct SegmentRecord {
  kingfisher::v1::QuorumSegmentMeta meta;
  int64_t mod_revision = 0;
};

class QuorumMeta {
 public:
  QuorumMeta(meta::MetaStore* store, std::string prefix, std::string log);

  // Makes the caller the log's writer at `term`: FENCED when a higher term owns it. Returns the
  // new epoch (one above every earlier writer's, also at the same term).
  absl::StatusOr<uint64_t> Claim(Term term, absl::Time deadline);

  // FENCED unless the owner record is still the one our Claim wrote (no writer opened since).
  absl::Status CheckOwner(absl::Time deadline) const;

  // Every segment, by id.
  absl::StatusOr<std::map<uint64_t, SegmentRecord>> List(absl::Time deadline) const;

  // As the owner: writes `put` segments (expected at their record's mod_revision, 0 = absent)
  // and deletes `remove` ones. FENCED if another writer claimed the log since; ABORTED when a
  // segment changed under us. Returns the revision the written segments now have.
  absl::StatusOr<int64_t> Update(const std::map<uint64_t, SegmentRecord>& put,
                                 const std::vector<uint64_t>& remove, absl::Time deadline);

  const std::string& log() const { return log_; }

 private:
  std::string SegmentKey(uint64_t segment) const;

  meta::MetaStore* const store_;
  const std::string log_;
  const std::string owner_key_;
  const std::string segment_prefix_;
  int64_t owner_revision_ = 0;  // of our Claim
  Term term_;
};

}  // namespace kf::wal::quorum
