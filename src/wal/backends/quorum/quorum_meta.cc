#include "wal/backends/quorum/quorum_meta.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/absl_compat.h"
#include "common/errors.h"
#include "common/status_macros.h"

namespace kf::wal::quorum {

QuorumMeta::QuorumMeta(meta::MetaStore* store, std::string prefix, std::string log)
    : store_(store),
      log_(log),
      owner_key_(absl::StrCat(prefix, "/", log, "/owner")),
      segment_prefix_(absl::StrCat(prefix, "/", log, "/seg/")) {}

std::string QuorumMeta::SegmentKey(uint64_t segment) const {
  return absl::StrCat(segment_prefix_, absl::StrFormat("%020d", segment));
}

absl::Status QuorumMeta::CheckOwner(absl::Time deadline) const {
  auto got = store_->Get(owner_key_, deadline);
  if (!got.ok()) return got.status();
  if (got->kv.mod_revision == owner_revision_) return absl::OkStatus();
  return FencedError(absl::StrCat("quorum WAL ", log_,
                                  ": another writer opened the log after term ", term_.value()));
}

absl::StatusOr<uint64_t> QuorumMeta::Claim(Term term, absl::Time deadline) {
  for (;;) {
    auto got = store_->Get(owner_key_, deadline);
    kingfisher::v1::QuorumLogMeta owner;
    std::vector<meta::Compare> cmp;
    if (got.ok()) {
      if (!owner.ParseFromString(got->kv.value)) {
        return StreamingError(StreamingCode::kDataLoss,
                              "quorum WAL: bad owner record " + owner_key_);
      }
      if (owner.term() > term.value()) {
        return FencedError(absl::StrCat("quorum WAL ", log_, ": term ", term.value(),
                                        " is below the owner's term ", owner.term()));
      }
      cmp.push_back(meta::Compare::ModRevisionIs(owner_key_, got->kv.mod_revision));
    } else if (absl::IsNotFound(got.status())) {
      cmp.push_back(meta::Compare::Absent(owner_key_));
    } else {
      return got.status();
    }
    owner.set_term(term.value());
    owner.set_epoch(owner.epoch() + 1);
    ASSIGN_OR_RETURN(
        auto txn,
        store_->Txn(cmp, {meta::Op::Put(owner_key_, owner.SerializeAsString())}, {}, deadline));
    if (!txn.succeeded) continue;  // another opener raced us: look again
    owner_revision_ = txn.revision;
    term_ = term;
    return owner.epoch();
  }
}

absl::StatusOr<std::map<uint64_t, SegmentRecord>> QuorumMeta::List(absl::Time deadline) const {
  ASSIGN_OR_RETURN(auto range, store_->Range(segment_prefix_, deadline));
  std::map<uint64_t, SegmentRecord> out;
  for (const auto& kv : range.kvs) {
    uint64_t id = 0;
    SegmentRecord rec;
    if (!absl::SimpleAtoi(ToAbsl(std::string_view(kv.key).substr(segment_prefix_.size())), &id) ||
        !rec.meta.ParseFromString(kv.value)) {
      return StreamingError(StreamingCode::kDataLoss, "quorum WAL: bad segment record " + kv.key);
    }
    rec.mod_revision = kv.mod_revision;
    out.emplace(id, std::move(rec));
  }
  return out;
}

absl::StatusOr<int64_t> QuorumMeta::Update(const std::map<uint64_t, SegmentRecord>& put,
                                           const std::vector<uint64_t>& remove,
                                           absl::Time deadline) {
  std::vector<meta::Compare> cmp = {meta::Compare::ModRevisionIs(owner_key_, owner_revision_)};
  std::vector<meta::Op> ops;
  for (const auto& [id, rec] : put) {
    const std::string key = SegmentKey(id);
    cmp.push_back(rec.mod_revision == 0 ? meta::Compare::Absent(key)
                                        : meta::Compare::ModRevisionIs(key, rec.mod_revision));
    ops.push_back(meta::Op::Put(key, rec.meta.SerializeAsString()));
  }
  for (uint64_t id : remove) ops.push_back(meta::Op::Delete(SegmentKey(id)));
  ASSIGN_OR_RETURN(auto txn, store_->Txn(cmp, ops, {meta::Op::Get(owner_key_)}, deadline));
  if (txn.succeeded) return txn.revision;
  const auto& owner = txn.results.at(0).kvs;
  if (owner.empty() || owner[0].mod_revision != owner_revision_) {
    return FencedError(absl::StrCat("quorum WAL ", log_, ": term ", term_.value(),
                                    " was fenced by a newer writer"));
  }
  return absl::AbortedError(absl::StrCat("quorum WAL ", log_, ": segment metadata changed"));
}

}  // namespace kf::wal::quorum
