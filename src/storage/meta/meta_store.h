// MetaStore: the metadata store of docs/semantics.md §4 — the small, strongly consistent key-value
// store the coordinator keeps its state in (pchannel assignments and terms via CAS, the node
// registry on leases, discovery by prefix watch, the TSO high-water mark).
//
// The model is etcd v3's, so the two implementations (EmbeddedMetaStore for standalone,
// EtcdMetaStore for distributed mode) behave the same:
//   - keys and values are byte strings; Range/Watch by key prefix;
//   - every mutation (Put, a Delete that deleted something, a Txn whose executed branch wrote
//     something, a lease revoke/expiry that deleted keys) bumps one store-wide revision; all
//     writes of one Txn share its revision;
//   - each key carries create_revision (0 = absent), mod_revision, version (writes since
//     creation) and the lease it is attached to;
//   - leases have a TTL; when one expires or is revoked, its keys are deleted (one revision);
//   - a watch delivers every change of a prefix from a start revision, in revision order, each
//     exactly once, with no gap; if the start revision was compacted away the watch ends with
//     OUT_OF_RANGE and the caller re-lists (Range gives the revision to watch from).
//
// Thread-safety: every implementation is thread-safe.
// Ownership: a WatchHandle owns its watch; it must be destroyed before the store.
// Deadlines: every call takes a deadline; a call whose deadline has passed fails with
// DEADLINE_EXCEEDED without side effects, one that times out in flight may or may not have
// been applied.
// Errors (absl::Status, the docs/semantics.md §3 meanings):
//   UNAVAILABLE        the store cannot be reached; retryable; a mutation may have been applied
//   DEADLINE_EXCEEDED  the deadline passed; a mutation may have been applied
//   NOT_FOUND          Get of an absent key; KeepAliveOnce/RevokeLease of an unknown or expired
//                      lease; Put with such a lease
//   OUT_OF_RANGE       Watch/Compact at a compacted revision (the watch callback gets it)
//   INVALID_ARGUMENT   empty key, bad TTL, bad limit
//   DATA_LOSS          the embedded store's files are corrupt
//   INTERNAL           an I/O error; the embedded store then refuses every later mutation
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kf::meta {

// A lease id; 0 means "no lease".
using LeaseId = int64_t;
inline constexpr LeaseId kNoLease = 0;

struct KeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;  // revision of the write that created the key
  int64_t mod_revision = 0;     // revision of the last write
  int64_t version = 0;          // writes since creation (1 after the create)
  LeaseId lease = kNoLease;

  bool operator==(const KeyValue&) const = default;
};

struct GetResult {
  KeyValue kv;
  int64_t revision = 0;  // store revision the read was served at
};

struct RangeResult {
  std::vector<KeyValue> kvs;  // sorted by key
  bool more = false;          // a limit cut the result short
  int64_t revision = 0;       // store revision the read was served at: watch from revision + 1
};

struct DeleteResult {
  int64_t deleted = 0;   // number of keys deleted
  int64_t revision = 0;  // the store revision after the call (unchanged when deleted == 0)
};

// One comparison of a Txn. "Key absent" is CreateRevision(key) == 0; an absent key has
// version, create and mod revision 0 and an empty value.
struct Compare {
  enum class Target { kValue, kVersion, kCreateRevision, kModRevision };
  enum class Result { kEqual, kNotEqual, kLess, kGreater };

  std::string key;
  Target target = Target::kValue;
  Result result = Result::kEqual;
  int64_t number = 0;  // for kVersion, kCreateRevision, kModRevision
  std::string value;   // for kValue

  static Compare Absent(std::string key);
  static Compare Exists(std::string key);
  static Compare ValueIs(std::string key, std::string value);
  static Compare VersionIs(std::string key, int64_t version);
  static Compare ModRevisionIs(std::string key, int64_t revision);
  static Compare CreateRevisionIs(std::string key, int64_t revision);
};

// One operation of a Txn branch.
struct Op {
  enum class Type { kGet, kPut, kDelete };

  Type type = Type::kGet;
  std::string key;
  bool prefix = false;  // kGet/kDelete: every key starting with `key`
  std::string value;    // kPut
  LeaseId lease = kNoLease;

  static Op Get(std::string key);
  static Op GetPrefix(std::string prefix);
  static Op Put(std::string key, std::string value, LeaseId lease = kNoLease);
  static Op Delete(std::string key);
  static Op DeletePrefix(std::string prefix);
};

// The result of one executed Op, in branch order.
struct OpResult {
  std::vector<KeyValue> kvs;  // kGet: the keys found, sorted
  int64_t deleted = 0;        // kDelete: number of keys deleted
};

struct TxnResult {
  bool succeeded = false;         // every compare held: the then-branch ran, else the else-branch
  int64_t revision = 0;           // store revision after the txn
  std::vector<OpResult> results;  // one per op of the branch that ran
};

struct LeaseGrant {
  LeaseId id = kNoLease;
  absl::Duration ttl;  // the TTL granted (etcd rounds up to whole seconds and a minimum)
};

struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  // kPut: the key after the write. kDelete: key and mod_revision (the deletion's revision)
  // only. kv.mod_revision is the event's revision.
  KeyValue kv;
};

// A batch of events in revision order (all events of one revision are in one batch), or a
// terminal error (OUT_OF_RANGE when the start revision was compacted; after an error the
// callback is not called again).
struct WatchResponse {
  absl::Status status;
  std::vector<WatchEvent> events;
  int64_t compact_revision = 0;  // with OUT_OF_RANGE: the compacted revision
};

// Called on a thread owned by the store, one call at a time per watch. It must not block for
// long (it holds up that watch) and must not destroy its own WatchHandle.
using WatchCallback = std::function<void(const WatchResponse&)>;

// Cancels the watch when destroyed; after the destructor returns the callback is not running
// and will not be called again.
class WatchHandle {
 public:
  virtual ~WatchHandle() = default;
};

class MetaStore {
 public:
  virtual ~MetaStore() = default;

  // The kv at `key`; NOT_FOUND when absent.
  virtual absl::StatusOr<GetResult> Get(std::string_view key, absl::Time deadline) = 0;
  // Every key starting with `prefix` ("" = all), sorted; at most `limit` kvs when limit > 0.
  virtual absl::StatusOr<RangeResult> Range(std::string_view prefix, absl::Time deadline,
                                            int64_t limit = 0) = 0;
  // Writes `value` (attached to `lease` if not kNoLease) and returns the new revision.
  virtual absl::StatusOr<int64_t> Put(std::string_view key, std::string_view value,
                                      absl::Time deadline, LeaseId lease = kNoLease) = 0;
  virtual absl::StatusOr<DeleteResult> Delete(std::string_view key, absl::Time deadline) = 0;
  virtual absl::StatusOr<DeleteResult> DeletePrefix(std::string_view prefix,
                                                    absl::Time deadline) = 0;
  // Atomically: if every compare holds run `then_ops`, else `else_ops`. A branch may write a
  // key at most once (INVALID_ARGUMENT otherwise, as etcd). Do not rely on a Get seeing an
  // earlier write of its own branch: etcd shows it, the embedded store shows the state before
  // the txn.
  virtual absl::StatusOr<TxnResult> Txn(const std::vector<Compare>& compares,
                                        const std::vector<Op>& then_ops,
                                        const std::vector<Op>& else_ops, absl::Time deadline) = 0;

  // A new lease of at least `ttl` (INVALID_ARGUMENT if ttl <= 0).
  virtual absl::StatusOr<LeaseGrant> GrantLease(absl::Duration ttl, absl::Time deadline) = 0;
  // Restarts the lease's TTL; returns the TTL it now has. NOT_FOUND when expired or revoked.
  virtual absl::StatusOr<absl::Duration> KeepAliveOnce(LeaseId lease, absl::Time deadline) = 0;
  // Deletes the lease and every key attached to it. NOT_FOUND when unknown.
  virtual absl::Status RevokeLease(LeaseId lease, absl::Time deadline) = 0;

  // Watches every key starting with `prefix` from `start_revision` (inclusive; 0 = changes
  // after the current revision). Errors of creating the watch (e.g. the deadline) are returned
  // here; a compacted start revision is reported through the callback.
  virtual absl::StatusOr<std::unique_ptr<WatchHandle>> Watch(std::string_view prefix,
                                                             int64_t start_revision,
                                                             WatchCallback callback,
                                                             absl::Time deadline) = 0;

  // Discards the history at and below `revision` (watches can no longer start there).
  // OUT_OF_RANGE if already compacted past it or if it is in the future.
  virtual absl::Status Compact(int64_t revision, absl::Time deadline) = 0;
};

// The smallest key greater than every key starting with `prefix` ("" for "" or all-0xff: no
// bound). Both implementations use it for prefix ranges.
std::string PrefixEnd(std::string_view prefix);

}  // namespace kf::meta
