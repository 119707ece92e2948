// Replicator: streams one pchannel of this (primary) cluster to its peer pchannel on one
// secondary cluster (docs/replication.md "The primary").
//
// A session: resolve the node serving the peer pchannel (through the secondary's discovery,
// client/router.h), ask it for its checkpoint (GetCheckpoint), read this WAL from the
// checkpoint's LCMID (so a transaction that began before it and committed after is seen whole)
// and send what follows the checkpoint in batches (Replicate.Append), one batch in flight.
// Not sent: TimeTicks, AlterReplicateConfig (each cluster gets its own), CreateSegment and Flush
// (each cluster seals its own), messages marked `_ur`, and messages that came from the
// secondary itself (replicated here while this cluster was its secondary). Each message outside a
// transaction, and each committed transaction, goes with a `wal.dist_consume` span as its `_tc` (it
// is read remotely), child of its own.
//
// The replicator stops where it reads the AlterReplicateConfig that removes its edge (when the
// WAL's latest configuration has none either), after sending everything before it: a demoted
// primary hands over every message it acknowledged.
//
// Any failure ends the session: after a backoff the next one starts again from the
// secondary's checkpoint, which the secondary's WAL keeps exactly (a message is taken only
// right after its predecessor, replicate_state.h), so nothing is lost or doubled whatever
// failed where. A closed or broken WAL ends the replicator (its manager starts one on the WAL
// that replaces it).
//
// Thread-safety: thread-safe. Ownership: owns its thread and its router; shares the Wal.
#pragma once

#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "grpcpp/security/credentials.h"
#include "kingfisher/v1/replicate.pb.h"
#include "wal/wal.h"

namespace kf::replicate {

class Replicator {
 public:
  struct Options {
    std::string cluster_id;  // this cluster, the source
    std::string pchannel;    // this cluster's
    std::string secondary_id;
    std::string secondary_endpoint;
    std::string secondary_pchannel;
    // Of the connection to the secondary (wire/credentials.h); null: plaintext.
    std::shared_ptr<grpc::ChannelCredentials> credentials;
    size_t max_batch_bytes = 1 << 20;
    int max_batch_messages = 4096;
    absl::Duration call_timeout = absl::Seconds(10);
    absl::Duration backoff_initial = absl::Milliseconds(100);
    absl::Duration backoff_max = absl::Seconds(5);
  };
  struct Progress {
    // "connecting", "replicating", "retrying", "stopped", "handed_over": configured out, and
    // everything the WAL holds before that AlterReplicateConfig is on the secondary, or
    // "fenced": the peer's own configuration does not make it this cluster's secondary (it was
    // promoted by a failover); nothing is sent, and once this WAL's configuration drops the
    // edge too the replicator stops in that state.
    std::string state = "starting";
    std::string last_error;
    uint64_t checkpoint_tt = 0;  // the secondary's, as last acknowledged
    uint64_t replicated = 0;     // messages appended by this replicator
    uint64_t ignored = 0;        // answered "already there"
    uint64_t pending = 0;        // read and sent, not yet answered
    absl::Time updated = absl::InfinitePast();
  };

  // Starts the replicator's thread.
  Replicator(Options options, std::shared_ptr<wal::Wal> wal);
  // Stops it (an RPC in flight is cancelled).
  ~Replicator();
  Replicator(const Replicator&) = delete;
  Replicator& operator=(const Replicator&) = delete;

  const Options& options() const { return options_; }
  const std::shared_ptr<wal::Wal>& wal() const { return wal_; }
  Progress progress() const;
  // False once the replicator ended for good (its WAL closed or broke).
  bool running() const;

 private:
  struct Ended {
    absl::Status status;
    bool final = false;        // the replicator stops (its WAL closed, or it was configured out)
    bool handed_over = false;  // configured out, with everything before that sent
    bool progressed = false;   // the secondary took something: the backoff starts over
    bool fenced = false;       // the peer is not this cluster's secondary (any more)
  };
  void Loop(std::stop_token stop);
  // One session and why it ended.
  Ended Session(std::stop_token stop, class Peer& peer);
  absl::Status SessionOnce(std::stop_token stop, Peer& peer, Ended& ended);
  // Whether `alter` (an AlterReplicateConfig read from the WAL) ends this replication.
  bool EndsHere(const ImmutableMessage& alter) const;
  void Update(const std::function<void(Progress&)>& change);

  const Options options_;
  const std::shared_ptr<wal::Wal> wal_;
  mutable absl::Mutex mu_;
  Progress progress_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  std::jthread thread_;
};

}  // namespace kf::replicate
