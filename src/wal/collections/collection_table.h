// CollectionTable: the node-side collection rules of one pchannel's WAL (docs/ddl-node.md).
//
// Per collection vchannel (`<pchannel>_<collectionID>v<shard>`, message/vchannel_name.h) it
// knows whether the collection is unknown, created (with the schema's dim and the partitions
// created since) or dropped, and admits appends accordingly:
// - every non-DDL message (Insert, Delete, txn control) needs a created collection, else
//   COLLECTION_NOT_FOUND (NOT_FOUND): nothing is ever appended after the DropCollection;
// - an Insert's dim must equal the schema's (INVALID_ARGUMENT) and its partition, unless it is
//   the default partition ("" or "_default"), must have been created (COLLECTION_NOT_FOUND);
// - CreateCollection on a created or dropped vchannel: COLLECTION_EXISTS (ALREADY_EXISTS;
//   collection ids are never reused); DropCollection on a dropped one: COLLECTION_NOT_FOUND;
//   DropCollection on an unknown one is appended (a drop always converges);
//   Create/DropPartition and ManualFlush need a created collection; creating an existing or
//   dropping a missing partition is COLLECTION_EXISTS / COLLECTION_NOT_FOUND.
// Raw vchannels and pchannel-level messages are never checked. Retried broadcasts never reach
// these rules: the WAL answers them from its broadcast-id table first (BroadcastKey).
//
// The WAL calls Prepare on the appending thread (payload decoding stays outside its lock),
// then Admit under its sequencer lock, and Apply under the same lock once the backend
// accepted a DDL: the check and the state change are ordered with every other append of the
// pchannel, so an Insert is either enqueued before the DropCollection or rejected. On open the
// state is rebuilt by Replay over every DDL of the log.
//
// Not thread-safe: the owner serialises every call but the static ones (the WAL's sequencer
// lock). Memory: one entry per collection vchannel ever seen on the pchannel (dropped ones
// included, ~100 bytes each) plus its partition names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "kingfisher/v1/checkpoint.pb.h"
#include "message/message.h"
#include "wal/idempotency.h"

namespace kf::wal {

// The partition every collection has from its creation and never drops.
inline constexpr std::string_view kDefaultPartition = "_default";

// Broadcast ids remembered per vchannel (the WAL's broadcast dedupe window). The broadcaster
// holds a broadcast's resource locks until every vchannel acknowledged it, so a vchannel's
// retried broadcast is always one of its latest; 16 leaves room for DDLs with disjoint keys.
inline constexpr size_t kBroadcastWindow = 16;

// The dedupe key of a broadcast copy: {vchannel ("" for pchannel-level), broadcast id};
// nullopt unless `m` is an exclusive (DDL) type with a decodable `_bh`.
std::optional<IdempotencyKey> BroadcastKey(const MutableMessage& m);

// What the rules need to know about one append, computed by Prepare.
struct CollectionAppend {
  enum class Kind : uint8_t { kUnchecked, kData, kDdl };
  Kind kind = Kind::kUnchecked;  // kUnchecked: raw vchannel or pchannel-level
  MessageType type = MessageType::kUnknown;
  std::string vchannel;   // kDdl only: Apply runs when the message may be gone
  uint32_t dim = 0;       // Insert: the batch's; CreateCollection: the schema's
  std::string partition;  // Insert ("" = default), Create/DropPartition
};

class CollectionTable {
 public:
  enum class State { kUnknown, kCreated, kDropped };

  // Classifies `m` and decodes what Admit needs: the header of an Insert (no row is copied),
  // the whole payload of a DDL. INVALID_ARGUMENT: a malformed vchannel; on a collection
  // vchannel an Insert or DDL payload that does not decode, a collection id that differs from
  // the vchannel's, a schema whose shards or vchannels do not include this vchannel, a
  // partition DDL naming the default partition.
  // REQUIRES: `*out` is default-constructed (the append path fills the one in its Pending).
  static absl::Status Prepare(const MutableMessage& m, CollectionAppend* out);
  static absl::StatusOr<CollectionAppend> Prepare(const MutableMessage& m) {
    CollectionAppend a;
    if (absl::Status s = Prepare(m, &a); !s.ok()) return s;
    return a;
  }

  // Whether `a`, on `vchannel` (the message's), may be appended now; the error otherwise.
  absl::Status Admit(std::string_view vchannel, const CollectionAppend& a) const;

  // The backend accepted the DDL `a`: its effect holds for every later append.
  void Apply(const CollectionAppend& a);

  // Rebuilds the state from one DDL read back from the log, in log order. The log is the
  // truth: no rule is checked; a DDL that does not Prepare (written before these rules) is
  // ignored.
  void Replay(const MutableMessage& m);

  State state(std::string_view vchannel) const;
  size_t size() const { return shards_.size(); }

  // The table in a recovery checkpoint (docs/recovery-storage.md), and back (replacing it).
  void SaveTo(kingfisher::v1::WalState* out) const;
  void LoadFrom(const kingfisher::v1::WalState& in);

 private:
  struct Shard {
    bool dropped = false;
    uint32_t dim = 0;
    absl::flat_hash_set<std::string> partitions;  // created, beyond the default partition
  };

  absl::Status AdmitDdl(const CollectionAppend& a, const Shard* shard) const;

  absl::flat_hash_map<std::string, Shard> shards_;
};

}  // namespace kf::wal
