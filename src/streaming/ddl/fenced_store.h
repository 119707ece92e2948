// FencedStore: the metadata-store writes of the catalog and the broadcaster, fenced like
// Coordinator::Write: every write transaction also requires the `coord` key to still have the
// create_revision of the acting coordinator's own key. A deposed coordinator (its key expired
// and another one created it again, at a new create_revision) can therefore never write, even
// if it still believes it leads.
//
// Thread-safety: thread-safe (the store is). Ownership: borrows the store, which must outlive
// it. Errors: FAILED_PRECONDITION "deposed" when the fence does not hold; the store's errors
// otherwise (UNAVAILABLE / DEADLINE_EXCEEDED: the write may or may not have been applied).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "storage/meta/meta_store.h"

namespace kf::streaming::ddl {

class FencedStore {
 public:
  // `coord_key` = ClusterKeys::coord(); `create_revision` = that key's create_revision when
  // this coordinator created it on election.
  FencedStore(meta::MetaStore* store, std::string coord_key, int64_t create_revision)
      : store_(store), coord_key_(std::move(coord_key)), create_revision_(create_revision) {}

  meta::MetaStore* store() const { return store_; }

  // Txn(fence && compares -> then_ops, else -> else_ops). The result is the store's, except
  // that a failed fence is FAILED_PRECONDITION, so `succeeded == false` always means that one
  // of `compares` failed (the else branch ran and its results are those of `else_ops`).
  absl::StatusOr<meta::TxnResult> Txn(std::vector<meta::Compare> compares,
                                      std::vector<meta::Op> then_ops,
                                      std::vector<meta::Op> else_ops, absl::Time deadline) const;

  // Raises the decimal counter at `key` (absent = 0) by `step` (>= 1) and returns the new
  // value. Retries a lost compare-and-swap; a failure of unknown outcome is returned (the value
  // may have been consumed: ids may have gaps, never repeats). DATA_LOSS if the value is not a
  // number.
  absl::StatusOr<uint64_t> Increment(const std::string& key, absl::Time deadline,
                                     uint64_t step = 1) const;

 private:
  meta::MetaStore* const store_;
  const std::string coord_key_;
  const int64_t create_revision_;
};

}  // namespace kf::streaming::ddl
