// ReplicateState: what one pchannel's WAL knows of cross-cluster replication
// (docs/replication.md): the configuration of its last AlterReplicateConfig, this cluster's
// role under it, and per source cluster the checkpoint of what was replicated from it.
//
// The rules (Check), applied to every append under the sequencer lock, so that they switch
// exactly at the AlterReplicateConfig's place in the log:
// - on a secondary, a message without `_rh` is refused with REPLICATE_VIOLATION naming the
//   primary (user writes go there), except the WAL's and the node's own (TimeTick,
//   CreateSegment, Flush), AlterReplicateConfig (the cluster's own broadcast; one carrying `_rh`
//   is refused) and RollbackTxn (ends a replicated txn that will not commit);
// - a message with `_rh` is refused with REPLICATE_VIOLATION on a cluster that is not a
//   secondary, or when it comes from a cluster other than the primary;
// - a replicated message that moves the checkpoint (one outside a transaction, or a CommitTxn)
//   at or below its source's checkpoint is refused with IGNORED_OPERATION: it is already in
//   the log; one whose predecessor (`_rh` previous_time_tick) is not the checkpoint is refused
//   with REPLICATE_VIOLATION: a message before it is missing (refused, or still in flight on a
//   stream that broke), so taking it would skip that one for good. Begin and bodies are not
//   checked: their transaction is judged at its commit.
// Apply, once the backend took the append, moves the checkpoint past it or installs the new
// configuration. Replay does both for a durable message (recovery, the query follower's copy
// that checkpoints carry).
//
// Not thread-safe: the owner serialises calls (the WAL's sequencer lock).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "kingfisher/v1/checkpoint.pb.h"
#include "kingfisher/v1/replicate.pb.h"
#include "message/message.h"
#include "message/replicate_config.h"

namespace kf::wal {

// What one append means to replication, decoded on the appending thread (Prepare).
struct ReplicateAppend {
  MessageType type = MessageType::kUnknown;
  bool replicated = false;  // carries `_rh`
  bool advances = false;    // replicated, and outside a txn or its CommitTxn
  // From `_rh` (set when `replicated`): cluster, message id, timetick, LCMID. Optional so that
  // every other append does not construct and destroy a protobuf message.
  std::optional<kingfisher::v1::ReplicateCheckpoint> source;
  uint64_t previous_time_tick = 0;  // from `_rh`
  // AlterReplicateConfig: its payload, and its timetick (set once sequenced).
  std::shared_ptr<const kingfisher::v1::ReplicateConfiguration> config;
  uint64_t time_tick = 0;
};

class ReplicateState {
 public:
  explicit ReplicateState(std::string cluster_id = "") : cluster_id_(std::move(cluster_id)) {}

  // INVALID_ARGUMENT: an `_rh` that does not decode, an AlterReplicateConfig whose payload is
  // not a valid configuration (ValidateReplicateConfig).
  static absl::Status Prepare(const MutableMessage& m, ReplicateAppend* out);

  absl::Status Check(const ReplicateAppend& a) const;
  void Apply(const ReplicateAppend& a);
  // A durable message in WAL order; one that does not prepare changes nothing (the WAL
  // admitted it, so that does not happen).
  void Replay(const MutableMessage& m);

  void SaveTo(kingfisher::v1::WalState* out) const;
  void LoadFrom(const kingfisher::v1::WalState& in);

  const std::string& cluster_id() const { return cluster_id_; }
  const kingfisher::v1::ReplicateConfiguration& config() const { return config_; }
  // The edges from this cluster that an AlterReplicateConfig dropped, by target (the latest
  // drop; one re-added is gone from here).
  const std::map<std::string, kingfisher::v1::ReplicateHandover, std::less<>>& handovers() const {
    return handovers_;
  }
  const ReplicateRole& role() const { return role_; }
  bool secondary() const { return role_.kind == ReplicateRole::Kind::kSecondary; }
  // The checkpoint of replication from `source`; nullopt before its first message.
  std::optional<kingfisher::v1::ReplicateCheckpoint> checkpoint(std::string_view source) const;
  const std::map<std::string, kingfisher::v1::ReplicateCheckpoint, std::less<>>& checkpoints()
      const {
    return checkpoints_;
  }

 private:
  void SetConfig(const kingfisher::v1::ReplicateConfiguration& config);

  std::string cluster_id_;
  kingfisher::v1::ReplicateConfiguration config_;
  std::map<std::string, kingfisher::v1::ReplicateHandover, std::less<>> handovers_;
  ReplicateRole role_;
  std::map<std::string, kingfisher::v1::ReplicateCheckpoint, std::less<>> checkpoints_;
};

}  // namespace kf::wal
