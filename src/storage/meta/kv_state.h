// KvState: the in-memory state machine of the embedded metadata store — the ordered key
// space, the revision, leases and their keys, and the recent change history that watches
// replay from.
//
// Every change goes through Apply(Mutation). A mutation is planned first (Plan*: evaluate
// compares, expand prefix deletes into keys) without touching the state, so the store can log
// it durably before applying it, and replay applies the logged mutations with the same code.
//
// Thread-safety: none; EmbeddedMetaStore serialises access. Ownership: plain value type.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/meta/meta_store.h"

namespace kf::meta {

// A durable change: one revision's writes, a lease grant, or a lease revoke (with the deletes
// of its keys). This is exactly what the log stores.
struct Mutation {
  enum class Kind : uint8_t { kWrite = 1, kLeaseGrant = 2, kLeaseRevoke = 3 };
  struct Write {
    bool is_delete = false;
    std::string key;
    std::string value;
    LeaseId lease = kNoLease;
  };

  Kind kind = Kind::kWrite;
  // kWrite / kLeaseRevoke: the revision the writes get; 0 when there are none (a revoke of a
  // lease without keys does not bump the revision).
  int64_t revision = 0;
  std::vector<Write> writes;
  LeaseId lease = kNoLease;  // kLeaseGrant / kLeaseRevoke
  int64_t ttl_ms = 0;        // kLeaseGrant
};

// A history entry: the event a watch delivers.
struct HistoryEvent {
  int64_t revision = 0;
  WatchEvent event;
};

// Revisions, lease ids and versions only grow; one at this value cannot (a replayed log or a
// snapshot that holds it is corrupt).
inline constexpr int64_t kMaxCounter = std::numeric_limits<int64_t>::max();

class KvState {
 public:
  struct Lease {
    int64_t ttl_ms = 0;
    std::set<std::string> keys;
  };

  // `history_limit`: revisions of history kept; older ones are compacted automatically.
  explicit KvState(size_t history_limit) : history_limit_(history_limit) {}

  int64_t revision() const { return revision_; }
  int64_t compacted() const { return compacted_; }
  LeaseId next_lease_id() const { return next_lease_id_; }
  const std::map<std::string, KeyValue, std::less<>>& kvs() const { return kvs_; }
  const std::map<LeaseId, Lease>& leases() const { return leases_; }

  const KeyValue* Find(std::string_view key) const;
  // kvs with `prefix`, sorted; at most `limit` when limit > 0 (`*more` set if cut short).
  std::vector<KeyValue> RangePrefix(std::string_view prefix, int64_t limit, bool* more) const;

  // Plans a Txn: evaluates the compares, collects the Get results of the chosen branch (they
  // see the state before the txn's writes) and its writes. INVALID_ARGUMENT if a branch writes
  // a key twice, NOT_FOUND if a put names an unknown lease.
  struct TxnPlan {
    bool succeeded = false;
    std::vector<OpResult> results;
    Mutation mutation;  // writes == empty: nothing to log
  };
  absl::StatusOr<TxnPlan> PlanTxn(const std::vector<Compare>& compares,
                                  const std::vector<Op>& then_ops,
                                  const std::vector<Op>& else_ops) const;
  // The mutation revoking `lease` (NOT_FOUND if unknown).
  absl::StatusOr<Mutation> PlanRevoke(LeaseId lease) const;
  Mutation PlanGrant(int64_t ttl_ms) const;

  // Applies a planned or replayed mutation. DATA_LOSS if it does not fit the state (a replayed
  // log that skips a revision or names an unknown lease).
  absl::Status Apply(const Mutation& m);

  // History entries with revision >= `from` whose key starts with `prefix`, whole revisions,
  // stopping after about `max_events`. `*next` = the revision to continue from.
  std::vector<WatchEvent> EventsFrom(int64_t from, std::string_view prefix, size_t max_events,
                                     int64_t* next) const;

  // Drops history at and below `revision` (<= revision()).
  void Compact(int64_t revision);

  // Snapshot restore: replaces the whole state; history starts after `revision`.
  void Restore(int64_t revision, LeaseId next_lease_id, std::map<LeaseId, Lease> leases,
               std::vector<KeyValue> kvs);

 private:
  const size_t history_limit_;
  int64_t revision_ = 1;  // like etcd: an empty store is at revision 1
  int64_t compacted_ = 0;
  LeaseId next_lease_id_ = 1;
  std::map<std::string, KeyValue, std::less<>> kvs_;
  std::map<LeaseId, Lease> leases_;
  std::deque<HistoryEvent> history_;  // ascending revision
};

}  // namespace kf::meta
