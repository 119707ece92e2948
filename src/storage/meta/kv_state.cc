#include "storage/meta/kv_state.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace kf::meta {
namespace {

bool HasPrefix(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

template <typename T>
bool CompareHolds(const T& actual, const T& expected, Compare::Result r) {
  switch (r) {
    case Compare::Result::kEqual:
      return actual == expected;
    case Compare::Result::kNotEqual:
      return actual != expected;
    case Compare::Result::kLess:
      return actual < expected;
    case Compare::Result::kGreater:
      return actual > expected;
  }
  return false;
}

}  // namespace

const KeyValue* KvState::Find(std::string_view key) const {
  auto it = kvs_.find(key);
  return it == kvs_.end() ? nullptr : &it->second;
}

std::vector<KeyValue> KvState::RangePrefix(std::string_view prefix, int64_t limit,
                                           bool* more) const {
  std::vector<KeyValue> out;
  *more = false;
  for (auto it = kvs_.lower_bound(prefix); it != kvs_.end() && HasPrefix(it->first, prefix); ++it) {
    if (limit > 0 && static_cast<int64_t>(out.size()) == limit) {
      *more = true;
      break;
    }
    out.push_back(it->second);
  }
  return out;
}

absl::StatusOr<KvState::TxnPlan> KvState::PlanTxn(const std::vector<Compare>& compares,
                                                  const std::vector<Op>& then_ops,
                                                  const std::vector<Op>& else_ops) const {
  TxnPlan plan;
  plan.succeeded = std::all_of(compares.begin(), compares.end(), [&](const Compare& c) {
    static const KeyValue kAbsent;
    const KeyValue* kv = Find(c.key);
    if (kv == nullptr) kv = &kAbsent;
    switch (c.target) {
      case Compare::Target::kValue:
        return CompareHolds(kv->value, c.value, c.result);
      case Compare::Target::kVersion:
        return CompareHolds(kv->version, c.number, c.result);
      case Compare::Target::kCreateRevision:
        return CompareHolds(kv->create_revision, c.number, c.result);
      case Compare::Target::kModRevision:
        return CompareHolds(kv->mod_revision, c.number, c.result);
    }
    return false;
  });
  const std::vector<Op>& ops = plan.succeeded ? then_ops : else_ops;
  std::set<std::string> written;
  for (const Op& op : ops) {
    OpResult& result = plan.results.emplace_back();
    if (op.type == Op::Type::kGet) {
      bool more = false;
      if (op.prefix) {
        result.kvs = RangePrefix(op.key, 0, &more);
      } else if (const KeyValue* kv = Find(op.key); kv != nullptr) {
        result.kvs.push_back(*kv);
      }
      continue;
    }
    std::vector<std::string> keys;
    if (op.type == Op::Type::kPut) {
      if (op.key.empty()) return absl::InvalidArgumentError("empty key");
      if (op.lease != kNoLease && leases_.count(op.lease) == 0) {
        return absl::NotFoundError(absl::StrCat("lease ", op.lease, " not found"));
      }
      keys.push_back(op.key);
    } else if (op.prefix) {
      bool more = false;
      for (KeyValue& kv : RangePrefix(op.key, 0, &more)) keys.push_back(std::move(kv.key));
    } else if (Find(op.key) != nullptr) {
      keys.push_back(op.key);
    }
    for (std::string& key : keys) {
      if (!written.insert(key).second) {
        return absl::InvalidArgumentError(absl::StrCat("txn writes key '", key, "' twice"));
      }
      plan.mutation.writes.push_back({.is_delete = op.type == Op::Type::kDelete,
                                      .key = std::move(key),
                                      .value = op.value,
                                      .lease = op.lease});
    }
    if (op.type == Op::Type::kDelete) result.deleted = static_cast<int64_t>(keys.size());
  }
  if (!plan.mutation.writes.empty()) plan.mutation.revision = revision_ + 1;
  return plan;
}

absl::StatusOr<Mutation> KvState::PlanRevoke(LeaseId lease) const {
  auto it = leases_.find(lease);
  if (it == leases_.end()) return absl::NotFoundError(absl::StrCat("lease ", lease, " not found"));
  Mutation m{.kind = Mutation::Kind::kLeaseRevoke, .lease = lease};
  for (const std::string& key : it->second.keys)
    m.writes.push_back({.is_delete = true, .key = key});
  if (!m.writes.empty()) m.revision = revision_ + 1;
  return m;
}

Mutation KvState::PlanGrant(int64_t ttl_ms) const {
  return {.kind = Mutation::Kind::kLeaseGrant, .lease = next_lease_id_, .ttl_ms = ttl_ms};
}

absl::Status KvState::Apply(const Mutation& m) {
  if (m.kind == Mutation::Kind::kLeaseGrant) {
    if (m.lease < next_lease_id_ || m.lease == kMaxCounter || m.ttl_ms <= 0) {
      return absl::DataLossError(absl::StrCat("lease grant ", m.lease, " out of order"));
    }
    leases_[m.lease] = Lease{.ttl_ms = m.ttl_ms};
    next_lease_id_ = m.lease + 1;
    return absl::OkStatus();
  }
  if (m.kind == Mutation::Kind::kLeaseRevoke && leases_.erase(m.lease) == 0) {
    return absl::DataLossError(absl::StrCat("revoke of unknown lease ", m.lease));
  }
  if (m.writes.empty()) return absl::OkStatus();
  if (revision_ == kMaxCounter || m.revision != revision_ + 1) {
    return absl::DataLossError(
        absl::StrCat("mutation at revision ", m.revision, " after revision ", revision_));
  }
  for (const Mutation::Write& w : m.writes) {
    const KeyValue* kv = w.is_delete ? nullptr : Find(w.key);
    if (kv != nullptr && kv->version == kMaxCounter) {
      return absl::DataLossError(absl::StrCat("put of key ", w.key, " at its last version"));
    }
  }
  revision_ = m.revision;
  for (const Mutation::Write& w : m.writes) {
    auto it = kvs_.find(w.key);
    if (it != kvs_.end() && it->second.lease != kNoLease) {
      auto lease = leases_.find(it->second.lease);
      if (lease != leases_.end()) lease->second.keys.erase(w.key);
    }
    if (w.is_delete) {
      if (it == kvs_.end()) continue;
      kvs_.erase(it);
      history_.push_back(
          {revision_,
           {.type = WatchEvent::Type::kDelete, .kv = {.key = w.key, .mod_revision = revision_}}});
      continue;
    }
    if (w.lease != kNoLease) {
      auto lease = leases_.find(w.lease);
      if (lease == leases_.end()) {
        return absl::DataLossError(absl::StrCat("put with unknown lease ", w.lease));
      }
      lease->second.keys.insert(w.key);
    }
    if (it == kvs_.end()) {
      it = kvs_.emplace(w.key, KeyValue{.key = w.key, .create_revision = revision_}).first;
    }
    KeyValue& kv = it->second;
    kv.value = w.value;
    kv.mod_revision = revision_;
    kv.version += 1;
    kv.lease = w.lease;
    history_.push_back({revision_, {.type = WatchEvent::Type::kPut, .kv = kv}});
  }
  if (revision_ - compacted_ > static_cast<int64_t>(history_limit_)) {
    Compact(revision_ - static_cast<int64_t>(history_limit_));
  }
  return absl::OkStatus();
}

std::vector<WatchEvent> KvState::EventsFrom(int64_t from, std::string_view prefix,
                                            size_t max_events, int64_t* next) const {
  std::vector<WatchEvent> out;
  auto it = std::lower_bound(history_.begin(), history_.end(), from,
                             [](const HistoryEvent& e, int64_t rev) { return e.revision < rev; });
  *next = std::max(from, revision_ + 1);
  for (; it != history_.end(); ++it) {
    // Stop only between revisions, so one revision's events are never split.
    if (out.size() >= max_events && it->revision != out.back().kv.mod_revision) {
      *next = it->revision;
      break;
    }
    if (HasPrefix(it->event.kv.key, prefix)) out.push_back(it->event);
  }
  return out;
}

void KvState::Compact(int64_t revision) {
  revision = std::min(revision, revision_);
  if (revision <= compacted_) return;
  compacted_ = revision;
  while (!history_.empty() && history_.front().revision <= revision) history_.pop_front();
}

void KvState::Restore(int64_t revision, LeaseId next_lease_id, std::map<LeaseId, Lease> leases,
                      std::vector<KeyValue> kvs) {
  revision_ = revision;
  compacted_ = revision;
  next_lease_id_ = next_lease_id;
  leases_ = std::move(leases);
  kvs_.clear();
  for (KeyValue& kv : kvs) {
    if (kv.lease != kNoLease) leases_[kv.lease].keys.insert(kv.key);
    std::string key = kv.key;
    kvs_.emplace(std::move(key), std::move(kv));
  }
  history_.clear();
}

}  // namespace kf::meta
