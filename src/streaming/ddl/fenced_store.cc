#include "streaming/ddl/fenced_store.h"

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace kf::streaming::ddl {

absl::StatusOr<meta::TxnResult> FencedStore::Txn(std::vector<meta::Compare> compares,
                                                 std::vector<meta::Op> then_ops,
                                                 std::vector<meta::Op> else_ops,
                                                 absl::Time deadline) const {
  compares.insert(compares.begin(), meta::Compare::CreateRevisionIs(coord_key_, create_revision_));
  else_ops.insert(else_ops.begin(), meta::Op::Get(coord_key_));
  absl::StatusOr<meta::TxnResult> txn = store_->Txn(compares, then_ops, else_ops, deadline);
  if (!txn.ok() || txn->succeeded) return txn;
  const std::vector<meta::KeyValue>& coord = txn->results.at(0).kvs;
  if (coord.empty() || coord[0].create_revision != create_revision_) {
    return absl::FailedPreconditionError(
        "deposed: the coord key is no longer this coordinator's; nothing was written");
  }
  txn->results.erase(txn->results.begin());
  return txn;
}

absl::StatusOr<uint64_t> FencedStore::Increment(const std::string& key, absl::Time deadline,
                                                uint64_t step) const {
  while (true) {
    uint64_t value = 0;
    int64_t mod_revision = 0;
    absl::StatusOr<meta::GetResult> got = store_->Get(key, deadline);
    if (got.ok()) {
      if (!absl::SimpleAtoi(got->kv.value, &value)) {
        return absl::DataLossError(absl::StrCat("metadata key ", key, ": not a counter"));
      }
      mod_revision = got->kv.mod_revision;
    } else if (!absl::IsNotFound(got.status())) {
      return got.status();
    }
    absl::StatusOr<meta::TxnResult> txn =
        Txn({meta::Compare::ModRevisionIs(key, mod_revision)},
            {meta::Op::Put(key, absl::StrCat(value + step))}, {}, deadline);
    if (!txn.ok()) return txn.status();
    if (txn->succeeded) return value + step;
    // Another writer of ours raised it meanwhile: read again.
  }
}

}  // namespace kf::streaming::ddl
