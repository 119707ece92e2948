// ReplicateManager: runs the node's replicators (replicator.h, docs/replication.md "The
// primary"): for every pchannel the node serves whose WAL's replicate configuration makes this
// cluster a primary, one replicator per secondary, to the pchannel at the same index there.
// It looks every `interval` (the configuration changes with an AlterReplicateConfig in the WAL,
// the pchannels with the node's assignment) and starts replicators, replaces them (a new Wal
// for the pchannel, another endpoint) and stops them when their WAL is no longer served here.
// For the pchannels it serves it resolves the DDL copies a node died appending
// (DdlPieces::Resolve) at the same pace.
// A replicator the configuration no longer wants runs on until it reaches that
// AlterReplicateConfig in the WAL and stops itself (replicator.h); then it is let go. One is
// also started, once per WAL, for each secondary whose edge the WAL's configuration dropped
// (WalReplicateState.handovers): a node that opens the WAL after the change (a restart, a
// move) still hands over what the secondary lacks.
//
// Thread-safety: thread-safe. Ownership: owns its thread and the replicators; borrows the
// registry (must outlive it).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "replicate/ddl_pieces.h"
#include "replicate/replicator.h"
#include "streaming/node/wal_registry.h"

namespace kf::replicate {

class ReplicateManager {
 public:
  struct Options {
    std::string cluster_id;
    absl::Duration interval = absl::Milliseconds(500);
    const DdlPieces* ddl_pieces = nullptr;  // borrowed; null: not resolved
    // Of the connections to the secondaries (wire/credentials.h); null: plaintext.
    std::shared_ptr<grpc::ChannelCredentials> peer_credentials;
  };
  struct Entry {
    Replicator::Options options;
    Replicator::Progress progress;
    uint64_t wal_last_tt = 0;  // the primary's last timetick, for the lag
    // Messages the WAL made durable after the checkpoint (Wal::MessagesAfter).
    std::optional<uint64_t> behind;
  };

  ReplicateManager(const streaming::node::WalRegistry* registry, Options options);
  ~ReplicateManager();  // stops every replicator

  // Starts or stops replicators now (the loop does it every interval).
  void Reconcile();
  // Every replicator, by pchannel and secondary, and those that handed over (configured out,
  // everything before it sent: `kfctl replicate promote` waits for them) since.
  std::vector<Entry> Status() const;

 private:
  using Key = std::tuple<std::string, std::string>;  // pchannel, secondary id

  std::shared_ptr<wal::Wal> FinishedOn(const Key& key) const ABSL_LOCKS_EXCLUDED(mu_);

  const streaming::node::WalRegistry* const registry_;
  const Options options_;
  mutable absl::Mutex mu_;
  std::map<Key, std::unique_ptr<Replicator>> replicators_ ABSL_GUARDED_BY(mu_);
  std::map<Key, Entry> handed_over_ ABSL_GUARDED_BY(mu_);  // and those that ended fenced
  // The WAL each replicator that ended read: a handover runs once per WAL.
  std::map<Key, std::weak_ptr<wal::Wal>> finished_ ABSL_GUARDED_BY(mu_);
  std::string resolve_error_ ABSL_GUARDED_BY(mu_);  // the last DdlPieces::Resolve error
  std::jthread thread_;
};

}  // namespace kf::replicate
